// QueryGate: what every query passes through before a handler sees it, and every UDP
// reply after, written once for the three places a query enters a LoopServer (a datagram
// on the loop, a datagram on the UDP receiver thread, a TCP message) and the one a UDP
// reply leaves it. In order:
//
//   1. the process's ClientLimiter, before the datagram is even parsed: over its client's
//      rate it is dropped or, every slip-th time, answered with TC; shed under overload it
//      is dropped. A trusted forwarder's datagrams (ClientAddressPolicy) skip this step:
//   2. admission (admission.h: parse once, decide FORMERR/BADVERS/NOTIMP, the reply limit)
//      and the client behind the query (ResolveClient; an ignored client-address option is
//      counted);
//   3. a trusted forwarder's query meets the limiter as the client its option names, and is
//      answered REFUSED over the limit, never dropped or truncated (LimitedReply): so does a
//      TCP query from a forwarder, whose connection carries many clients;
//   4. after the handler, every UDP reply meets the ResponseRateLimiter, if any.
//
// A QueryGate is a view of policies its LoopServer owns (LoopServer::Options); it holds no
// state of its own, so the loop thread and the receiver thread use the same one at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/dns/header.h"
#include "common/dns/transport.h"
#include "common/loop/socket_address.h"
#include "common/server/admission.h"
#include "common/server/client_limiter.h"
#include "common/server/response_rate_limiter.h"

namespace kdns::server {

// Largest TC or REFUSED reply to a query: header, a name, type and class.
inline constexpr size_t kMaxLimitedReplyBytes = dns::kHeaderSize + 255 + 4;

class QueryGate {
 public:
  // All must outlive the gate; `clients` and `responses` may be null (no such limit).
  QueryGate(const AdmissionPolicy& admission, const ClientAddressPolicy& client_address,
            ClientLimiter* clients, ResponseRateLimiter* responses)
      : admission_(admission),
        client_address_(client_address),
        clients_(clients),
        responses_(responses) {}

  // What Enter decided.
  enum class Pass : uint8_t {
    kHandle,   // *admission is set: on to the handler (admitted or not: it answers either way)
    kLimited,  // the limiter stopped it: send the short reply written into `out`, if any
  };

  // Steps 1-3 for `packet` from `peer` at `now_ns` (NowNs(): 0 when no limiter needs a
  // clock). On kLimited, *limited_reply_size bytes (0: nothing, a drop) of the short reply
  // are in `out`, which must hold kMaxLimitedReplyBytes.
  Pass Enter(std::span<const uint8_t> packet, dns::Transport transport,
             const loop::SocketAddress& peer, uint64_t now_ns, Admission* admission,
             std::span<uint8_t> out, size_t* limited_reply_size) const;

  // Step 4: the bytes to send for the UDP reply `reply` to the client of a query that came
  // `via_forwarder` (Admission::client_source == kOption): `reply` itself, its short form
  // written into `slip` (kMaxLimitedReplyBytes), or none (dropped; never for a forwarder's).
  std::span<const uint8_t> Leave(const loop::SocketAddress& client, bool via_forwarder,
                                 std::span<const uint8_t> reply, uint64_t now_ns,
                                 std::span<uint8_t> slip) const;

  // The monotonic clock for Enter and Leave when a limiter reads it; 0 otherwise (the
  // common case pays no clock read).
  uint64_t NowNs() const;
  bool limits_responses() const { return responses_ != nullptr; }

 private:
  // The limiter's say on a query from `client` (steps 1 and 3): true to go on.
  bool PassClients(std::span<const uint8_t> packet, const loop::SocketAddress& client,
                   LimitedReply kind, uint64_t now_ns, std::span<uint8_t> out,
                   size_t* reply_size) const;

  const AdmissionPolicy& admission_;
  const ClientAddressPolicy& client_address_;
  ClientLimiter* clients_;
  ResponseRateLimiter* responses_;
};

}  // namespace kdns::server

// The wire logic of kubedns's forwarding path, with no I/O: what a client must be told when
// its query went to an upstream (dns_handler.h does the I/O).
//
//   - ClientReply turns an upstream's reply (shared by coalesced waiters) into one client's
//     answer: the client's ID and question case (upstream::RewriteForClient), fitted to the
//     client's buffer: over UDP min(its EDNS size, 1232) or 512 without EDNS, as the answerer
//     limits local answers; a reply that does not fit is re-encoded and cut at a whole RRset
//     with TC set (RFC 2181 §9), so the client retries over TCP. OPT only when the client
//     sent one (RFC 6891 §7): the upstream's OPT belongs to our exchange with it, so a reply
//     whose EDNS does not match the client's is re-encoded with ours.
//   - ErrorReply writes SERVFAIL (or another rcode) for a query the upstreams could not
//     answer, with RA set as skydns does.
//   - AppendChase completes an ExternalName CNAME chain (answerer.h, kExternalTarget) with
//     the upstream's answer for the target: its records, its rcode (NXDOMAIN describes the
//     last name, RFC 6604) and, for a negative answer, its SOA (RFC 2308). When the upstream
//     is authoritative and did not follow a CNAME of its own, it says which name to ask next.
//
// Pure functions on values; no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/transport.h"
#include "common/dns/types.h"
#include "common/server/admission.h"
#include "common/upstream/forwarder.h"

namespace kdns::kubedns {

// What is kept of a client's query while its answer comes from an upstream.
struct ClientQuery {
  uint16_t id = 0;
  dns::Name qname;  // as the client wrote it
  dns::RrType qtype = dns::RrType::kA;
  dns::RrClass qclass = dns::RrClass::kIn;
  bool rd = false;
  bool cd = false;
  bool edns = false;  // the client sent OPT
  bool dnssec_ok = false;
  dns::Transport transport = dns::Transport::kUdp;
  size_t limit_bytes = 512;  // the largest answer it may get

  // From an admitted query; limit_bytes is the admission's reply limit.
  static ClientQuery From(const server::Admission& admission);
};

// Writes the client's answer from a kAnswer `result` into *out. False (answer SERVFAIL) when
// the reply cannot be re-encoded.
[[nodiscard]] bool ClientReply(const upstream::Result& result, const ClientQuery& client,
                               std::vector<uint8_t>* out);

// An answer with no records and `rcode`, written into `buffer`.
std::span<const uint8_t> ErrorReply(const ClientQuery& client, dns::Rcode rcode,
                                    std::span<uint8_t> buffer);

enum class ChaseStep : uint8_t {
  kDone,    // `partial` is the complete answer
  kFollow,  // the upstream's answer ends in a CNAME it did not follow: ask *next
  kFailed,  // the upstream's rcode cannot end a chain (answer SERVFAIL)
};

// Appends `reply` (the upstream's answer for `target`, type `qtype`) to `partial` (our answer
// so far, its CNAME chain ending at `target`). Sets the rcode, and for a negative answer
// copies the reply's SOA into the authority section. kFollow when the reply is NOERROR, has
// no SOA, and its own CNAMEs lead from `target` to a name it gives no records for.
ChaseStep AppendChase(const dns::Message& reply, const dns::Name& target, dns::RrType qtype,
                      dns::Message* partial, dns::Name* next);

// CNAME records in the answer section (to bound a chain).
size_t CountCnames(const dns::Message& message);

}  // namespace kdns::kubedns

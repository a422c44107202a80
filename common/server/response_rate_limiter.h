// ResponseRateLimiter: response rate limiting of identical answers (RRL), with BIND's
// semantics, for operators who expose a server outside the cluster (node-local mode, or a
// cache reachable from outside), where a spoofed source turns us into an amplifier.
// `--rrl-responses-per-second=N` (0: off, the default) limits, per client netblock (/24
// for IPv4 and /56 for IPv6, BIND's defaults) and per second:
//
//   answers    per (name, type): the same answer again and again
//   NODATA     per name
//   NXDOMAIN   per zone (the owner of the SOA in the authority section): random
//              subdomains of one zone are one bucket
//   errors     SERVFAIL, REFUSED, FORMERR, ... : one bucket per netblock
//
// each bucket N responses per second with a burst of N, the four counted separately. Over
// it a response is dropped, except every `slip`-th, which is sent truncated (TC, the
// question only) so a real client retries over TCP and gets its answer; a spoofed victim
// gets a small packet. Only UDP responses are limited. Buckets live in a fixed RateTable.
//
// Thread: Check from any thread at once (lock-free, see RateTable).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/base/ip_prefix.h"
#include "common/loop/socket_address.h"
#include "common/server/rate_table.h"

namespace kdns::server {

struct ResponseRateOptions {
  uint32_t responses_per_second = 0;  // 0: off
  uint32_t slip = 2;                  // every slip-th limited response is sent truncated
  uint8_t prefix_v4 = 24;
  uint8_t prefix_v6 = 56;
  std::vector<IpPrefix> exempt;
  size_t slots = size_t{1} << 15;
};

enum class ResponseVerdict : uint8_t { kSend, kDrop, kSlip };

// Which bucket a response counts in.
enum class ResponseKind : uint8_t { kAnswer, kNoData, kNxDomain, kError };

class ResponseRateLimiter {
 public:
  explicit ResponseRateLimiter(const ResponseRateOptions& options);
  ResponseRateLimiter(const ResponseRateLimiter&) = delete;
  ResponseRateLimiter& operator=(const ResponseRateLimiter&) = delete;

  bool enabled() const { return emission_ns_ != 0; }

  // Charges `response` (a whole DNS response about to go to `client` over UDP) at `now_ns`.
  // A response that does not parse counts as an error.
  ResponseVerdict Check(const loop::SocketAddress& client, std::span<const uint8_t> response,
                        uint64_t now_ns);

  size_t tracked() const { return table_.tracked(); }
  size_t memory_bytes() const { return table_.memory_bytes(); }
  uint64_t slipped() const { return slipped_.load(std::memory_order_relaxed); }

 private:
  const ResponseRateOptions options_;
  const uint64_t emission_ns_;
  const uint64_t tolerance_ns_;
  RateTable table_;
  std::atomic<uint64_t> slipped_{0};
};

// The bucket of `response` and the hash of what identifies it within its netblock.
ResponseKind ClassifyResponse(std::span<const uint8_t> response, uint64_t* key);

// What a limited query or response becomes when something is sent at all: TC (a real
// client retries over TCP, a spoofed victim gets a small packet), or REFUSED, for a peer
// that is our own forwarder asking for a client (admission.h, ClientSource::kOption): TC
// would only move the flood onto the forwarder's TCP connection, and silence would look
// to it like a dead server, counted against every client's route.
enum class LimitedReply : uint8_t { kTruncated, kRefused };

// Writes the short form of DNS message `message` (a query or a response) into `out`: its
// header and first question, QR set, no records, and TC (kTruncated) or rcode REFUSED
// (kRefused). Returns its size, 0 if the message has no readable question or `out` is too
// small.
size_t WriteLimitedReply(std::span<const uint8_t> message, LimitedReply kind,
                         std::span<uint8_t> out);
inline size_t WriteTruncated(std::span<const uint8_t> message, std::span<uint8_t> out) {
  return WriteLimitedReply(message, LimitedReply::kTruncated, out);
}

}  // namespace kdns::server

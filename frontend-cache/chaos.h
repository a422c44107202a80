// dnsmasq's statistics over CHAOS TXT queries, answered byte for byte as dnsmasq 2.87+
// does (src/cache.c cache_make_stat, src/rfc1035.c answer_request), so the sidecar and any
// tool written for dnsmasq read us unchanged:
//   cachesize.bind. insertions.bind. evictions.bind. misses.bind. hits.bind.
//       one TXT RR, class CH, TTL 0, holding one character-string: the decimal value;
//   servers.bind.
//       ONE TXT RR holding one character-string per distinct upstream address,
//       "addr#port sent failed" (e.g. "10.0.0.10#53 1234 5"), counters summed per address
//       ("tcp://addr#port ..." for a tcp:// upstream, which dnsmasq does not have);
//   version.bind.
//       "kdns-<version>" (dnsmasq answers "dnsmasq-<version>").
// The owner is the question name (compressed to it), QR AA RA set, RD and CD copied,
// rcode NOERROR, an OPT record only when the query had one (with its DO bit). Queries of
// type TXT or ANY get the answer; any other class-CH query, whatever its name or type,
// gets NOTIMP with AA clear (dnsmasq does so for *.bind and *.server, and forwards other
// names; we never forward CH). Deviation: with no upstream at all dnsmasq sends a TXT with
// empty rdata, which RFC 1035 §3.3.14 does not allow; we send one empty string.
//
// Pure; builds into a caller buffer. Not on the hot path (it allocates for the strings).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/dns/parser.h"
#include "common/loop/socket_address.h"
#include "common/upstream/upstream_address.h"

namespace kdns::frontend {

struct UpstreamCounters {
  upstream::Upstream address;
  uint64_t sent = 0;    // queries sent to it (dnsmasq's "queries")
  uint64_t failed = 0;  // of which failed: timeout, SERVFAIL, REFUSED (dnsmasq's "failed_queries")
};

struct ChaosStats {
  uint64_t cache_size = 0;  // the configured capacity, as dnsmasq reports --cache-size
  uint64_t insertions = 0;
  uint64_t evictions = 0;
  uint64_t misses = 0;  // dnsmasq: queries forwarded
  uint64_t hits = 0;    // dnsmasq: queries answered locally
  std::vector<UpstreamCounters> servers;
};

// Writes the reply to a class CH `query` into `out` (at most max_size_bytes). Returns its
// size; 0 when it does not fit or `query` is not class CH.
size_t AnswerChaos(const dns::Query& query, const ChaosStats& stats, std::span<uint8_t> out,
                   size_t max_size_bytes);

}  // namespace kdns::frontend

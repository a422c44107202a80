// Limits: the one vocabulary for "a bound protected us" (DESIGN §7), shared by every layer
// that enforces one (the HTTP server, DNS over TCP, forwarding, waiting queries, the cache,
// loop probes, rate limiting and shedding, multicluster imports, debug data asked of a
// published port) in both DNS servers, the nanny and the sidecar.
//
// Each hit is counted in one process-wide table and exported by every program as
//   kdns_limit_hits_total{limit}   times a limit was hit (a connection closed or refused,
//                                  a query answered SERVFAIL at once or dropped, an entry
//                                  not cached, ...); `limit` is LimitName()
// and logged at most once per kLogInterval per limit, with how many hits the interval
// saw, so a flood cannot flood the log too.
//
// Usage, where the bound is enforced:
//   if (open_ >= max_) {
//     limits::RecordLimitHit(limits::Limit::kTcpConnections, peer.ToString());
//     CloseOldestIdle();
//   }
//
// Thread-safe: relaxed atomic counters, one cache line per limit; no lock on the hit path
// except when a log line is due (at most once per interval per limit).
#pragma once

#include <cstdint>
#include <string_view>

#include "common/metrics/registry.h"

namespace kdns::limits {

enum class Limit : uint8_t {
  // HTTP (health, readiness, metrics)
  kHttpConnections,           // one HTTP port's connection cap: the oldest idle one closed
  kHttpConnectionsPerSource,  // one source's connection cap: its oldest idle one closed
  kHttpRequestTimeout,        // a started request not complete in time: closed
  // DNS over TCP
  kTcpConnections,           // the process-wide connection cap
  kTcpConnectionsPerSource,  // one source's connection cap
  kTcpFrameTimeout,          // a started frame not complete in time: closed
  kTcpIdleTimeout,           // no whole message in the idle time: closed
  kTcpOutputPerConnection,   // unread replies over one connection's bound
  kTcpOutputTotal,           // unread replies over the process's bound
  kTcpQueryTimeout,          // queries outstanding with no answer in time: answered now
  kTcpEvictedInFlight,       // at the total cap, a connection with a query in flight closed
  // Forwarding
  kRouteInFlight,     // a route's in-flight budget (cluster zone, stub domain, default)
  kUpstreamInFlight,  // one upstream's in-flight budget
  kUpstreamDown,      // failed fast: every upstream of the route is known down
  kWaitingQueries,    // the process-wide budget of queries waiting for an upstream
  kWaitersPerQuery,   // waiters coalesced on one upstream query
  kForwardInFlight,   // the process-wide ceiling on queries in flight (--dns-forward-max)
  // Forwarded queries' 0x20 case (common/upstream/dns0x20.h)
  kUpstream0x20Mismatch,  // a reply with our ID and question in another case: dropped
  kUpstream0x20Fallback,  // an upstream that does not echo the case gets the plain name
  // Forwarding, each client's fair share: a route's or an upstream's reserve refused to a
  // client holding at least the average client's slots
  kRouteClientShare,
  kUpstreamClientShare,
  // Cache
  kCacheEntryTooLarge,  // an answer over the per-entry cap: not cached
  kCacheBytes,          // the byte budget: an entry evicted to make room
  // Loop probes
  kLoopProbeRejected,  // a probe name replayed, expired or from the wrong address
  // Per-client rate limiting and shedding
  kClientRate,          // a client over its response rate
  kResponseRate,        // RRL: identical responses over their rate
  kShedReceiveBacklog,  // shed under overload: the receive queue backs up
  kShedWaitingQueries,  // shed under overload: the waiting-query budget is nearly full
  // Debug data (debug_http.h)
  kDebugOnPublishedPort,  // /debug/* or /cache asked of a port that is not --debug-address
  // Multicluster imports (kubedns): objects a tenant writes
  kImportInvalid,       // a name that is not a DNS name in its zone: that name (or import) skipped
  kImportTooLarge,      // an import over a cap (aliases, endpoints, bytes): not served
  kImportNameConflict,  // a name another namespace's import claimed first: not added to it
  // The client-address EDNS option (admission.h)
  kClientAddressUntrusted,  // sent by a peer not trusted with it: ignored
  kClientAddressMalformed,  // malformed from a trusted peer: ignored
  // NOTIFY (frontend-cache, RFC 1996)
  kNotifyUntrusted,  // from a source not in --notify-from: REFUSED, nothing dropped
  kCount
};

// The `limit` label: "http_connections", "tcp_frame_timeout", ...
std::string_view LimitName(Limit limit);

// How often one limit may log.
inline constexpr uint64_t kLimitLogIntervalMs = 10'000;

// Counts a hit and logs it (rate-limited); `detail` (a peer address, a route, an
// upstream) is shown in the line that is logged, if one is.
void RecordLimitHit(Limit limit, std::string_view detail = {});

// Hits so far in this process.
uint64_t LimitHits(Limit limit);

// Adds kdns_limit_hits_total (every limit, zeros included) to `registry`.
void RegisterLimitMetrics(metrics::Registry& registry);

}  // namespace kdns::limits

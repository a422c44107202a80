// --metrics-compat=coredns: CoreDNS's metric families (coredns_dns_*, coredns_cache_*,
// coredns_forward_*, coredns_panics_total), so the dashboards and alerts written for CoreDNS
// (the kubernetes-mixin's and coredns-mixin's CoreDNS* alerts, CoreDNS's Grafana dashboard)
// keep working after a move to kdns.
//
// The families are derived at scrape time from the program's own exposition text, the way a
// recording rule derives one series from others: each coredns_* sample is a sum of kdns_*
// samples the program exports anyway (CorednsSources names them). So the query path pays
// nothing for them, on or off, and the two sets cannot disagree. What each family is made of,
// and which CoreDNS labels are kept (those with a meaning here: `server`, `zone`, `type`,
// `rcode`, `to`; CoreDNS's `proto`, `family`, `view` and `plugin` are left out, which PromQL
// reads as empty), is in docs/operators.md, "CoreDNS metric names".
//
// Pure, any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/metrics/text_parser.h"

namespace kdns::metrics {

enum class MetricsCompat { kNone, kCoredns };

// "none" or "coredns" (the value of --metrics-compat); false for anything else.
[[nodiscard]] bool ParseMetricsCompat(std::string_view text, MetricsCompat* compat);

// The kdns_* families of one program that the coredns_* families are summed from. A family
// left empty, or absent from the text, gives no coredns_* family (kubedns has no cache).
struct CorednsSources {
  // CoreDNS's `server` label: the listening address as CoreDNS writes it, "dns://:53".
  std::string server;
  // Counter {type, rcode}: answered queries → coredns_dns_requests_total{type} and
  // coredns_dns_responses_total{rcode}.
  std::string queries;
  // Histogram, its series summed whatever their labels → coredns_dns_request_duration_seconds.
  std::string duration;
  // Counters and gauges without labels → coredns_cache_*.
  std::string cache_hits;
  std::string cache_misses;
  std::string cache_entries;           // every entry, negative ones included
  std::string cache_negative_entries;  // of which negative (CoreDNS's type="denial")
  // Per upstream {upstream} (UpstreamTable's families): <prefix>_queries_total,
  // _replies_total{rcode}, _timeouts_total, and the histogram _rtt_seconds →
  // coredns_forward_*{to}.
  std::string upstream_prefix;
  // One counter series, e.g. `kdns_frontend_servfail_total{reason="upstream_down"}`: queries
  // failed at once because every upstream of their route was down →
  // coredns_forward_healthcheck_broken_total.
  std::string all_upstreams_down;
  // Counter: queries refused over a forwarding budget →
  // coredns_forward_max_concurrent_rejects_total.
  std::string forward_rejected;
};

// CoreDNS's `to` label for one of our upstream labels: "10.0.0.1#53" → "10.0.0.1:53",
// "tcp://[fd00::1]#53" → "[fd00::1]:53".
std::string CorednsUpstreamName(std::string_view upstream);

// The coredns_* families derived from `ours` (a program's parsed /metrics), as exposition
// text to append to it.
std::string CorednsFamilies(const ParsedText& ours, const CorednsSources& sources);

// `text` (a program's rendered /metrics) with the coredns_* families appended. Our own
// rendering always parses (the callers' tests scrape it); if it ever did not, `text` comes
// back as it is rather than a scrape failing.
std::string WithCorednsFamilies(std::string text, const CorednsSources& sources);

}  // namespace kdns::metrics

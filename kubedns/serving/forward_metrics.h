// Metrics of kubedns's forwarding path (names it does not own, and ExternalName chains that
// leave the cluster domain), registered on the program's Registry next to DnsMetrics:
//
//   kdns_kubedns_forward_queries_total{route,kind}    queries handed to the forwarder;
//                                                     route: stub, default; kind: forward
//                                                     (a client's query), chase (a CNAME
//                                                     target of an ExternalName chain),
//                                                     autopath (a candidate of an --autopath
//                                                     walk, autopath.h, or its ExternalName
//                                                     target: the upstream lookups autopath
//                                                     causes)
//   kdns_kubedns_forward_failures_total{reason}       client queries answered SERVFAIL by the
//                                                     forwarding path: timeout, upstream_error,
//                                                     network_error, no_upstreams, overloaded
//                                                     (over a forwarding budget: --forward-max,
//                                                     --forward-max-per-route or -per-upstream,
//                                                     or the client's share of its reserve),
//                                                     upstream_down (every upstream of the
//                                                     route known down: failed at once),
//                                                     shutdown,
//                                                     bad_reply (not fit for the client),
//                                                     chain (a CNAME chain too long, looping
//                                                     or ending in an error)
//   kdns_kubedns_forward_duration_seconds             from the client's query to our answer
//   kdns_kubedns_forward_in_flight                    client queries waiting for upstreams
//   kdns_kubedns_forward_config_reloads_total{result} ConfigMap versions seen: applied,
//                                                     rejected (invalid), unreadable
//   kdns_kubedns_forward_config_error                 1 while the directory's content is not
//                                                     in effect (the previous config is)
//   kdns_kubedns_forward_stub_domains                 stub domains routed
//   kdns_kubedns_forward_default_upstreams            default upstream servers
//   kdns_kubedns_upstream_{queries,failures,timeouts,answers}_total{upstream}
//                                                     per upstream server, from the table the
//                                                     threads' Forwarders share
//
// Counters are resolved once here; recording is a per-thread increment. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "common/metrics/registry.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/upstream_table.h"
#include "kubedns/serving/upstream_routes.h"

namespace kdns::kubedns {

enum class ForwardKind : uint8_t { kForward, kChase, kAutopath };
const char* ForwardKindName(ForwardKind kind);  // "forward", "chase", "autopath"

enum class ConfigReload : uint8_t { kApplied, kRejected, kUnreadable, kCount };

class ForwardMetrics {
 public:
  // `table` (may be null) is read at scrape time for the per-upstream families.
  ForwardMetrics(metrics::Registry& registry,
                 const std::shared_ptr<const upstream::UpstreamTable>& table);

  void Sent(RouteKind route, ForwardKind kind) {
    sent_[static_cast<size_t>(route)][static_cast<size_t>(kind)]->Inc();
  }
  void Failed(upstream::ForwardFailure failure) { failures_[static_cast<size_t>(failure)]->Inc(); }
  void Answered(double seconds) { duration_->Observe(seconds); }
  void Started() { in_flight_->Inc(); }
  void Finished() { in_flight_->Dec(); }

  void ConfigLoaded(ConfigReload result) { reloads_[static_cast<size_t>(result)]->Inc(); }
  void SetConfigError(bool error) { config_error_->Set(error ? 1 : 0); }
  void SetRoutes(const UpstreamRoutes& routes);

 private:
  std::array<std::array<metrics::Counter*, 3>, 2> sent_{};  // [RouteKind][ForwardKind]
  std::array<metrics::Counter*, upstream::kForwardFailures> failures_{};
  std::array<metrics::Counter*, static_cast<size_t>(ConfigReload::kCount)> reloads_{};
  metrics::Histogram* duration_;
  metrics::Gauge* in_flight_;
  metrics::Gauge* config_error_;
  metrics::Gauge* stub_domains_;
  metrics::Gauge* default_upstreams_;
};

}  // namespace kdns::kubedns

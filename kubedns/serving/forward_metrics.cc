#include "kubedns/serving/forward_metrics.h"

#include "common/upstream/upstream_set.h"

namespace kdns::kubedns {

const char* ForwardKindName(ForwardKind kind) {
  switch (kind) {
    case ForwardKind::kForward:
      return "forward";
    case ForwardKind::kChase:
      return "chase";
    case ForwardKind::kAutopath:
      return "autopath";
  }
  return "other";
}

ForwardMetrics::ForwardMetrics(metrics::Registry& registry,
                               const std::shared_ptr<const upstream::UpstreamTable>& table) {
  auto& sent = registry.AddCounterFamily(
      "kdns_kubedns_forward_queries_total",
      "Queries kubedns handed to its upstreams, by route (stub, default) and kind (forward: "
      "a name it does not own; chase: the target of an ExternalName CNAME outside the zone; "
      "autopath: a candidate of an --autopath walk, or its ExternalName target).",
      {"route", "kind"});
  for (RouteKind route : {RouteKind::kStub, RouteKind::kDefault}) {
    for (ForwardKind kind : {ForwardKind::kForward, ForwardKind::kChase, ForwardKind::kAutopath}) {
      sent_[static_cast<size_t>(route)][static_cast<size_t>(kind)] =
          &sent.WithLabels({RouteKindName(route), ForwardKindName(kind)});
    }
  }
  auto& failures = registry.AddCounterFamily(
      "kdns_kubedns_forward_failures_total",
      "Forwarded or chased client queries answered SERVFAIL, by reason.", {"reason"});
  for (size_t i = 0; i < failures_.size(); ++i) {
    failures_[i] = &failures.WithLabels(
        {upstream::ForwardFailureName(static_cast<upstream::ForwardFailure>(i))});
  }
  duration_ = &registry.AddHistogram(
      "kdns_kubedns_forward_duration_seconds",
      "Time from a forwarded or chased client query to its answer.",
      {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  in_flight_ = &registry.AddGauge("kdns_kubedns_forward_in_flight",
                                  "Client queries waiting for an upstream answer.");
  auto& reloads = registry.AddCounterFamily(
      "kdns_kubedns_forward_config_reloads_total",
      "Versions of the --config-dir ConfigMap seen: applied, rejected (invalid: the previous "
      "configuration stays), unreadable.",
      {"result"});
  const char* reload_names[] = {"applied", "rejected", "unreadable"};
  for (size_t i = 0; i < reloads_.size(); ++i) reloads_[i] = &reloads.WithLabels({reload_names[i]});
  config_error_ = &registry.AddGauge(
      "kdns_kubedns_forward_config_error",
      "1 while the --config-dir content is invalid or unreadable (the previous configuration "
      "is in effect), else 0.");
  stub_domains_ =
      &registry.AddGauge("kdns_kubedns_forward_stub_domains", "Stub domains being routed.");
  default_upstreams_ = &registry.AddGauge(
      "kdns_kubedns_forward_default_upstreams",
      "Default upstream servers (upstreamNameservers, --nameservers or resolv.conf); 0 means "
      "names outside the cluster get SERVFAIL.");
  if (table == nullptr) return;
  upstream::RegisterUpstreamMetrics(registry, "kdns_kubedns_upstream", table);
}

void ForwardMetrics::SetRoutes(const UpstreamRoutes& routes) {
  stub_domains_->Set(static_cast<double>(routes.stubs().size()));
  default_upstreams_->Set(static_cast<double>(routes.default_route().upstreams.size()));
}

}  // namespace kdns::kubedns

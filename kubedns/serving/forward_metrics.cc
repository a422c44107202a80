#include "kubedns/serving/forward_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "common/upstream/upstream_set.h"

namespace kdns::kubedns {
namespace {

// One per-upstream counter family, read from the shared table at scrape time.
class UpstreamCollector final : public metrics::Collector {
 public:
  using Field = const metrics::Counter upstream::UpstreamTable::Entry::*;
  UpstreamCollector(std::shared_ptr<const upstream::UpstreamTable> table, Field field)
      : table_(std::move(table)), field_(field) {}

  void Collect(std::vector<metrics::Sample>& out) const override {
    for (const auto* entry : table_->Entries()) {
      out.push_back({{upstream::FormatUpstreamAddress(entry->address)},
                     static_cast<double>((entry->*field_).Value())});
    }
  }

 private:
  std::shared_ptr<const upstream::UpstreamTable> table_;
  Field field_;
};

}  // namespace

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
  using Entry = upstream::UpstreamTable::Entry;
  const std::pair<const char*, const char*> families[] = {
      {"kdns_kubedns_upstream_queries_total",
       "Queries sent to each upstream (every try, UDP or TCP)."},
      {"kdns_kubedns_upstream_failures_total",
       "Tries to each upstream without a usable reply (timeouts, network errors, SERVFAIL, "
       "REFUSED, NOTIMP, FORMERR)."},
      {"kdns_kubedns_upstream_timeouts_total", "Tries to each upstream that timed out."},
      {"kdns_kubedns_upstream_answers_total", "Replies from each upstream used for answers."},
      {"kdns_kubedns_upstream_tls_handshake_failures_total",
       "TLS handshakes with each tls:// upstream that failed (untrusted certificate, wrong "
       "name); its queries fail, never sent in the clear."},
  };
  const UpstreamCollector::Field fields[] = {&Entry::sent, &Entry::failed, &Entry::timeouts,
                                             &Entry::answers, &Entry::tls_handshake_failures};
  for (size_t i = 0; i < 5; ++i) {
    registry.AddCollector(families[i].first, families[i].second, metrics::MetricType::kCounter,
                          {"upstream"}, std::make_shared<UpstreamCollector>(table, fields[i]));
  }
  registry.AddHistogramCollector(
      "kdns_kubedns_upstream_rtt_seconds", "Round-trip time of each upstream's replies.",
      {"upstream"}, [table](const metrics::Registry::HistogramVisitor& visit) {
        for (const auto* entry : table->Entries()) {
          visit({upstream::FormatUpstreamAddress(entry->address)}, entry->rtt_seconds);
        }
      });
  upstream::RegisterHealthMetrics(registry, "kdns_kubedns_upstream", table);
  upstream::RegisterTlsMetrics(registry, "kdns_kubedns_upstream", table);
  if (table->counts_replies()) {
    upstream::RegisterReplyMetrics(registry, "kdns_kubedns_upstream", table);
  }
}

void ForwardMetrics::SetRoutes(const UpstreamRoutes& routes) {
  stub_domains_->Set(static_cast<double>(routes.stubs().size()));
  default_upstreams_->Set(static_cast<double>(routes.default_route().upstreams.size()));
}

}  // namespace kdns::kubedns

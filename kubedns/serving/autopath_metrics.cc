#include "kubedns/serving/autopath_metrics.h"

namespace kdns::kubedns {

AutopathMetrics::AutopathMetrics(metrics::Registry& registry, const Autopath& autopath) {
  attempts_ = &registry.AddCounter(
      "kdns_kubedns_autopath_attempts_total",
      "Queries N.<ns>.svc.<domain> without records that started an --autopath walk.");
  auto& hits = registry.AddCounterFamily(
      "kdns_kubedns_autopath_hits_total",
      "--autopath walks answered with a candidate (a CNAME to it and its answer), by the "
      "suffix that won.",
      {"suffix"});
  for (const dns::Name& suffix : autopath.suffixes()) {
    hits_.push_back(&hits.WithLabels({suffix.ToText()}));
  }
  auto& misses = registry.AddCounterFamily(
      "kdns_kubedns_autopath_misses_total",
      "--autopath walks answered as without autopath (NXDOMAIN), by reason: nxdomain (no "
      "candidate exists), failed (an upstream failed or timed out), overloaded (over "
      "--max-waiting-queries).",
      {"reason"});
  const char* names[] = {"nxdomain", "failed", "overloaded"};
  for (size_t i = 0; i < misses_.size(); ++i) misses_[i] = &misses.WithLabels({names[i]});
}

}  // namespace kdns::kubedns

// Metrics of kubedns's --autopath (answering/autopath.h), registered on the program's Registry next
// to DnsMetrics and ForwardMetrics:
//
//   kdns_kubedns_autopath_attempts_total           queries N.<ns>.svc.Z answered NXDOMAIN by
//                                                  the records that started a walk
//   kdns_kubedns_autopath_hits_total{suffix}       walks answered with a candidate, by the
//                                                  suffix that won (svc.Z, Z, each
//                                                  --autopath-search domain, "." for N.)
//   kdns_kubedns_autopath_misses_total{reason}     walks answered as without autopath:
//                                                  nxdomain (every candidate NXDOMAIN),
//                                                  failed (an upstream failed or timed out),
//                                                  overloaded (no room to wait: over
//                                                  --max-waiting-queries)
// The upstream lookups autopath causes are kdns_kubedns_forward_queries_total{kind="autopath"}
// (forward_metrics.h); a walk waiting for its candidates counts in
// kdns_kubedns_forward_in_flight and, once answered, in kdns_kubedns_forward_duration_seconds,
// as any query waiting for an upstream does.
//
// Every series is resolved at construction (the suffixes are fixed at start-up), so
// recording is a per-thread increment. Thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/metrics/registry.h"
#include "kubedns/answering/autopath.h"

namespace kdns::kubedns {

enum class AutopathMiss : uint8_t { kNxDomain, kFailed, kOverloaded, kCount };

class AutopathMetrics {
 public:
  AutopathMetrics(metrics::Registry& registry, const Autopath& autopath);

  void Attempted() { attempts_->Inc(); }
  // `suffix` indexes Autopath::suffixes().
  void Hit(size_t suffix) { hits_[suffix]->Inc(); }
  void Missed(AutopathMiss miss) { misses_[static_cast<size_t>(miss)]->Inc(); }

 private:
  metrics::Counter* attempts_;
  std::vector<metrics::Counter*> hits_;
  std::array<metrics::Counter*, static_cast<size_t>(AutopathMiss::kCount)> misses_{};
};

}  // namespace kdns::kubedns

// The set of metrics one program exposes, and their rendering in the Prometheus text
// exposition format 0.0.4 (serve Render() with kContentType from text_format.h).
//
// Registration returns references that live as long as the Registry; programs register at
// start-up and keep the references (a hot path never looks a metric up by name). Names are
// given whole, so legacy kube-dns names (`skydns_skydns_dns_request_count_total`,
// `kubedns_dnsmasq_hits`) come out unchanged; BuildFqName() joins parts like the Go client.
// An invalid metric or label name, a duplicate name, or a histogram label named `le` is our
// own bug and CHECK-fails at registration.
//
// Rendering: families in registration order, each with `# HELP` and `# TYPE` once; series of
// a labelled family sorted by label values; a labelled family with no series yet is left out
// (as the Go client does); metrics registered without labels are always there.
//
// Thread-safe: registration and Render() may happen at any time from any thread. Render()
// calls callbacks and collectors on its own thread without holding the registry's lock.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/metrics/collector.h"
#include "common/metrics/counter.h"
#include "common/metrics/family.h"
#include "common/metrics/gauge.h"
#include "common/metrics/histogram.h"
#include "common/metrics/text_format.h"

namespace kdns::metrics {

namespace internal {
class Entry;
}  // namespace internal

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Counter& AddCounter(std::string name, std::string help);
  Gauge& AddGauge(std::string name, std::string help);
  Histogram& AddHistogram(std::string name, std::string help, std::vector<double> upper_bounds);

  CounterFamily& AddCounterFamily(std::string name, std::string help,
                                  std::vector<std::string> label_names);
  GaugeFamily& AddGaugeFamily(std::string name, std::string help,
                              std::vector<std::string> label_names);
  HistogramFamily& AddHistogramFamily(std::string name, std::string help,
                                      std::vector<std::string> label_names,
                                      std::vector<double> upper_bounds);

  // Evaluated at every Render(), on the rendering thread. A callback counter must never
  // decrease (the owner keeps a running total across restarts of what it counts).
  void AddCallbackCounter(std::string name, std::string help, std::function<double()> read);
  void AddCallbackGauge(std::string name, std::string help, std::function<double()> read);

  // A family whose series the collector lists at every Render(); `type` is kCounter or
  // kGauge. The registry keeps the collector alive; what it reads must outlive the registry.
  void AddCollector(std::string name, std::string help, MetricType type,
                    std::vector<std::string> label_names,
                    std::shared_ptr<const Collector> collector);

  // A histogram family whose series live elsewhere (e.g. one per upstream server in a
  // table shared by threads): at every Render(), `for_each` calls its argument once per
  // series with the label values and the histogram. The histograms must outlive the call.
  using HistogramVisitor =
      std::function<void(const std::vector<std::string>& label_values, const Histogram&)>;
  void AddHistogramCollector(std::string name, std::string help,
                             std::vector<std::string> label_names,
                             std::function<void(const HistogramVisitor&)> for_each);

  std::string Render() const;

 private:
  // Takes ownership of `entry` after checking its names. The sample names it renders (for a
  // histogram also _bucket, _sum and _count) are reserved against duplicates.
  void Add(std::unique_ptr<internal::Entry> entry);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<internal::Entry>> entries_;  // Guarded by mu_; never shrinks.
  std::set<std::string> taken_names_;                      // Guarded by mu_.
};

}  // namespace kdns::metrics

// A metric family with label names fixed at registration: one Counter, Gauge or Histogram per
// combination of label values, created on first use and kept for the family's lifetime, so
// the reference WithLabels() returns stays valid. The lookup takes a mutex and builds a key:
// hot paths look the series up once and cache the reference.
//
// Callers keep the label values bounded: rcodes, query types, a fixed list of upstreams.
// Never a query name or a client address: every combination is kept forever (a Counter is
// about 1 KiB) and is one more series in every scrape. Thread-safe.
#pragma once

#include <glog/logging.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/metrics/counter.h"
#include "common/metrics/gauge.h"
#include "common/metrics/histogram.h"

namespace kdns::metrics {

template <typename Metric>
class Family {
 public:
  using Factory = std::function<std::unique_ptr<Metric>()>;

  Family(std::vector<std::string> label_names, Factory factory)
      : label_names_(std::move(label_names)), factory_(std::move(factory)) {}
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  // The series for these label values, in the order of label_names(); CHECKs the count.
  Metric& WithLabels(std::initializer_list<std::string_view> label_values) {
    return WithLabelValues(std::vector<std::string>(label_values.begin(), label_values.end()));
  }
  Metric& WithLabelValues(std::vector<std::string> label_values) {
    CHECK_EQ(label_values.size(), label_names_.size())
        << "wrong number of label values for a family with labels " << JoinedLabelNames();
    std::lock_guard lock(mu_);
    auto it = series_.find(label_values);
    if (it == series_.end()) it = series_.emplace(std::move(label_values), factory_()).first;
    return *it->second;
  }

  const std::vector<std::string>& label_names() const { return label_names_; }

  // Calls visit(label_values, metric) for each series, sorted by label values (compared as
  // byte strings, first label first), so the rendered order does not depend on traffic.
  // Holds the family's lock: `visit` must not call WithLabels().
  template <typename Visit>
  void ForEach(Visit&& visit) const {
    std::lock_guard lock(mu_);
    for (const auto& [label_values, metric] : series_) visit(label_values, *metric);
  }

 private:
  std::string JoinedLabelNames() const {
    std::string joined;
    for (const std::string& name : label_names_) joined += (joined.empty() ? "" : ",") + name;
    return joined;
  }

  const std::vector<std::string> label_names_;
  const Factory factory_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> series_;  // Guarded by mu_.
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

}  // namespace kdns::metrics

// A value that goes up and down (cache size, open connections, last sync time). It is one
// atomic double, not sharded: gauges are set from control paths or by one owner thread, not
// incremented per packet. Double, because Prometheus values are doubles and gauges often hold
// fractions (seconds, ratios); integers up to 2^53 stay exact under Inc/Dec. Any thread may
// call any method.
#pragma once

#include <atomic>

namespace kdns::metrics {

class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  void Inc(double delta = 1) { Add(delta); }
  void Dec(double delta = 1) { Add(-delta); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

}  // namespace kdns::metrics

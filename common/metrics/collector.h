// Metrics whose series are only known at scrape time: one sample per upstream server, per
// probe, per anything whose set changes while the program runs. The owner implements
// Collector and registers it with Registry::AddCollector(), giving the family's name, help,
// type and label names; the registry calls Collect() from the thread that renders (the HTTP
// thread) and writes HELP, TYPE and escaping itself. So Collect() reads only thread-safe
// state (atomics, an immutable snapshot) and must not register metrics.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kdns::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge", "histogram": the word in a `# TYPE` line.
std::string_view TypeName(MetricType type);

struct Sample {
  std::vector<std::string> label_values;  // In the order of the family's label names.
  double value = 0;
};

class Collector {
 public:
  virtual ~Collector() = default;
  // Appends the current samples, in any order (the registry sorts them by label values).
  // Counter samples must never decrease between calls.
  virtual void Collect(std::vector<Sample>& out) const = 0;
};

}  // namespace kdns::metrics

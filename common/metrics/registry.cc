#include "common/metrics/registry.h"

#include <glog/logging.h>

#include <algorithm>
#include <utility>

#include "common/metrics/text_format.h"

namespace kdns::metrics {

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

namespace internal {

// One registered family: its header fields and how to render its samples.
class Entry {
 public:
  Entry(std::string name, std::string help, MetricType type, std::vector<std::string> labels)
      : name_(std::move(name)), help_(std::move(help)), type_(type), labels_(std::move(labels)) {}
  virtual ~Entry() = default;

  // Appends the sample lines, without the header; nothing when there are no series.
  virtual void AppendSamples(std::string& out) const = 0;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& labels() const { return labels_; }

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> labels_;
};

}  // namespace internal

namespace {

using internal::Entry;

void AppendSeries(const Entry& entry, const std::vector<std::string>& values,
                  const Counter& counter, std::string& out) {
  AppendSampleLine(out, entry.name(), entry.labels(), values, std::to_string(counter.Value()));
}

void AppendSeries(const Entry& entry, const std::vector<std::string>& values, const Gauge& gauge,
                  std::string& out) {
  AppendSampleLine(out, entry.name(), entry.labels(), values, FormatValue(gauge.Value()));
}

void AppendSeries(const Entry& entry, const std::vector<std::string>& values,
                  const Histogram& histogram, std::string& out) {
  const Histogram::Snapshot snapshot = histogram.Collect();
  const std::vector<double>& bounds = histogram.upper_bounds();
  const std::string bucket_name = entry.name() + "_bucket";
  for (size_t i = 0; i <= bounds.size(); ++i) {
    const std::string le = i < bounds.size() ? FormatGoFloat(bounds[i]) : "+Inf";
    AppendSampleLine(out, bucket_name, entry.labels(), values,
                     std::to_string(snapshot.cumulative_counts[i]), "le", le);
  }
  AppendSampleLine(out, entry.name() + "_sum", entry.labels(), values, FormatValue(snapshot.sum));
  AppendSampleLine(out, entry.name() + "_count", entry.labels(), values,
                   std::to_string(snapshot.count));
}

template <typename Metric>
class FamilyEntry final : public Entry {
 public:
  FamilyEntry(std::string name, std::string help, MetricType type, std::vector<std::string> labels,
              typename Family<Metric>::Factory factory)
      : Entry(std::move(name), std::move(help), type, labels),
        family_(std::move(labels), std::move(factory)) {}

  void AppendSamples(std::string& out) const override {
    family_.ForEach([&](const std::vector<std::string>& values, const Metric& metric) {
      AppendSeries(*this, values, metric, out);
    });
  }

  Family<Metric>& family() { return family_; }

 private:
  Family<Metric> family_;
};

class CallbackEntry final : public Entry {
 public:
  CallbackEntry(std::string name, std::string help, MetricType type, std::function<double()> read)
      : Entry(std::move(name), std::move(help), type, {}), read_(std::move(read)) {
    CHECK(read_) << "callback metric " << this->name() << " has no function";
  }

  void AppendSamples(std::string& out) const override {
    AppendSampleLine(out, name(), {}, {}, FormatValue(read_()));
  }

 private:
  const std::function<double()> read_;
};

class CollectorEntry final : public Entry {
 public:
  CollectorEntry(std::string name, std::string help, MetricType type,
                 std::vector<std::string> labels, std::shared_ptr<const Collector> collector)
      : Entry(std::move(name), std::move(help), type, std::move(labels)),
        collector_(std::move(collector)) {
    CHECK(collector_) << "collector for " << this->name() << " is null";
    CHECK(type == MetricType::kCounter || type == MetricType::kGauge)
        << "collector for " << this->name() << " must be a counter or a gauge";
  }

  void AppendSamples(std::string& out) const override {
    std::vector<Sample> samples;
    collector_->Collect(samples);
    std::sort(samples.begin(), samples.end(),
              [](const Sample& a, const Sample& b) { return a.label_values < b.label_values; });
    for (const Sample& sample : samples) {
      if (sample.label_values.size() != labels().size()) {
        // Our bug, but in a scrape: loud in debug builds, skipped in release.
        LOG_FIRST_N(ERROR, 5) << "collector for " << name() << " gave "
                              << sample.label_values.size() << " label values for "
                              << labels().size() << " labels";
        DCHECK(false) << "collector label count mismatch for " << name();
        continue;
      }
      AppendSampleLine(out, name(), labels(), sample.label_values, FormatValue(sample.value));
    }
  }

 private:
  const std::shared_ptr<const Collector> collector_;
};

class HistogramCollectorEntry final : public Entry {
 public:
  HistogramCollectorEntry(std::string name, std::string help, std::vector<std::string> labels,
                          std::function<void(const Registry::HistogramVisitor&)> for_each)
      : Entry(std::move(name), std::move(help), MetricType::kHistogram, std::move(labels)),
        for_each_(std::move(for_each)) {
    CHECK(for_each_) << "histogram collector for " << this->name() << " has no function";
  }

  void AppendSamples(std::string& out) const override {
    std::vector<std::pair<std::vector<std::string>, const Histogram*>> series;
    for_each_([&](const std::vector<std::string>& values, const Histogram& histogram) {
      if (values.size() != labels().size()) {
        LOG_FIRST_N(ERROR, 5) << "histogram collector for " << name() << " gave " << values.size()
                              << " label values for " << labels().size();
        DCHECK(false) << "histogram collector label count mismatch for " << name();
        return;
      }
      series.emplace_back(values, &histogram);
    });
    std::sort(series.begin(), series.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [values, histogram] : series) AppendSeries(*this, values, *histogram, out);
  }

 private:
  const std::function<void(const Registry::HistogramVisitor&)> for_each_;
};

void CheckLabelNames(const std::string& name, const std::vector<std::string>& labels,
                     MetricType type) {
  for (size_t i = 0; i < labels.size(); ++i) {
    CHECK(IsValidLabelName(labels[i])) << "invalid label name '" << labels[i] << "' in " << name;
    CHECK(type != MetricType::kHistogram || labels[i] != "le")
        << "histogram " << name << " may not use the label name 'le'";
    CHECK(std::find(labels.begin(), labels.begin() + i, labels[i]) == labels.begin() + i)
        << "label name '" << labels[i] << "' repeated in " << name;
  }
}

template <typename Metric>
std::unique_ptr<FamilyEntry<Metric>> MakeFamilyEntry(std::string name, std::string help,
                                                     MetricType type,
                                                     std::vector<std::string> labels,
                                                     typename Family<Metric>::Factory factory) {
  return std::make_unique<FamilyEntry<Metric>>(std::move(name), std::move(help), type,
                                               std::move(labels), std::move(factory));
}

}  // namespace

Registry::Registry() = default;
Registry::~Registry() = default;

void Registry::Add(std::unique_ptr<Entry> entry) {
  const std::string& name = entry->name();
  CHECK(IsValidMetricName(name)) << "invalid metric name '" << name << "'";
  CheckLabelNames(name, entry->labels(), entry->type());
  std::vector<std::string> sample_names = {name};
  if (entry->type() == MetricType::kHistogram) {
    sample_names.insert(sample_names.end(), {name + "_bucket", name + "_sum", name + "_count"});
  }
  std::lock_guard lock(mu_);
  for (const std::string& sample_name : sample_names) {
    CHECK(taken_names_.insert(sample_name).second)
        << "metric " << name << " registered twice (" << sample_name << ")";
  }
  entries_.push_back(std::move(entry));
}

Counter& Registry::AddCounter(std::string name, std::string help) {
  return AddCounterFamily(std::move(name), std::move(help), {}).WithLabels({});
}

Gauge& Registry::AddGauge(std::string name, std::string help) {
  return AddGaugeFamily(std::move(name), std::move(help), {}).WithLabels({});
}

Histogram& Registry::AddHistogram(std::string name, std::string help,
                                  std::vector<double> upper_bounds) {
  return AddHistogramFamily(std::move(name), std::move(help), {}, std::move(upper_bounds))
      .WithLabels({});
}

CounterFamily& Registry::AddCounterFamily(std::string name, std::string help,
                                          std::vector<std::string> label_names) {
  auto entry =
      MakeFamilyEntry<Counter>(std::move(name), std::move(help), MetricType::kCounter,
                               std::move(label_names), [] { return std::make_unique<Counter>(); });
  CounterFamily& family = entry->family();
  Add(std::move(entry));
  return family;
}

GaugeFamily& Registry::AddGaugeFamily(std::string name, std::string help,
                                      std::vector<std::string> label_names) {
  auto entry =
      MakeFamilyEntry<Gauge>(std::move(name), std::move(help), MetricType::kGauge,
                             std::move(label_names), [] { return std::make_unique<Gauge>(); });
  GaugeFamily& family = entry->family();
  Add(std::move(entry));
  return family;
}

HistogramFamily& Registry::AddHistogramFamily(std::string name, std::string help,
                                              std::vector<std::string> label_names,
                                              std::vector<double> upper_bounds) {
  HistogramFamily::Factory factory = [bounds = std::move(upper_bounds)] {
    return std::make_unique<Histogram>(bounds);
  };
  factory();  // Bad bounds CHECK-fail now, at registration, rather than at first use.
  auto entry = MakeFamilyEntry<Histogram>(std::move(name), std::move(help), MetricType::kHistogram,
                                          std::move(label_names), std::move(factory));
  HistogramFamily& family = entry->family();
  Add(std::move(entry));
  return family;
}

void Registry::AddCallbackCounter(std::string name, std::string help,
                                  std::function<double()> read) {
  Add(std::make_unique<CallbackEntry>(std::move(name), std::move(help), MetricType::kCounter,
                                      std::move(read)));
}

void Registry::AddCallbackGauge(std::string name, std::string help, std::function<double()> read) {
  Add(std::make_unique<CallbackEntry>(std::move(name), std::move(help), MetricType::kGauge,
                                      std::move(read)));
}

void Registry::AddCollector(std::string name, std::string help, MetricType type,
                            std::vector<std::string> label_names,
                            std::shared_ptr<const Collector> collector) {
  Add(std::make_unique<CollectorEntry>(std::move(name), std::move(help), type,
                                       std::move(label_names), std::move(collector)));
}

void Registry::AddHistogramCollector(std::string name, std::string help,
                                     std::vector<std::string> label_names,
                                     std::function<void(const HistogramVisitor&)> for_each) {
  Add(std::make_unique<HistogramCollectorEntry>(std::move(name), std::move(help),
                                                std::move(label_names), std::move(for_each)));
}

std::string Registry::Render() const {
  // Entries are never removed, so the pointers stay valid after the lock is released;
  // callbacks and collectors then run without it and may take their own locks.
  std::vector<const Entry*> entries;
  {
    std::lock_guard lock(mu_);
    entries.reserve(entries_.size());
    for (const auto& entry : entries_) entries.push_back(entry.get());
  }
  std::string out;
  std::string samples;
  for (const Entry* entry : entries) {
    samples.clear();
    entry->AppendSamples(samples);
    if (samples.empty()) continue;
    AppendFamilyHeader(out, entry->name(), entry->help(), TypeName(entry->type()));
    out += samples;
  }
  return out;
}

}  // namespace kdns::metrics

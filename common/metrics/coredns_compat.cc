#include "common/metrics/coredns_compat.h"

#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "common/metrics/text_format.h"

namespace kdns::metrics {
namespace {

// CoreDNS's `zone` for everything we answer: one server block for the root, as kubeadm's
// Corefile (`.:53 { ... }`) has it.
constexpr std::string_view kRootZone = ".";

using LabelValues = std::vector<std::string>;

// Sums of samples by output label values, sorted, as one family is rendered.
struct Sums {
  std::map<LabelValues, double> by_labels;
  void Add(LabelValues labels, double value) { by_labels[std::move(labels)] += value; }
};

// A histogram's buckets, sum and count by output label values.
struct HistogramSums {
  struct One {
    std::map<double, double> buckets;  // upper bound → cumulative count (+Inf included)
    double sum = 0;
    double count = 0;
  };
  std::map<LabelValues, One> by_labels;
};

class Writer {
 public:
  void Counter(std::string_view name, std::string_view help, const std::vector<std::string>& labels,
               const Sums& sums) {
    Family(name, help, "counter", labels, sums);
  }
  void Gauge(std::string_view name, std::string_view help, const std::vector<std::string>& labels,
             const Sums& sums) {
    Family(name, help, "gauge", labels, sums);
  }
  void Histogram(std::string_view name, std::string_view help,
                 const std::vector<std::string>& labels, const HistogramSums& sums) {
    if (sums.by_labels.empty()) return;
    AppendFamilyHeader(out_, name, help, "histogram");
    const std::string bucket = std::string(name) + "_bucket";
    for (const auto& [values, one] : sums.by_labels) {
      for (const auto& [le, count] : one.buckets) {
        AppendSampleLine(out_, bucket, labels, values, FormatValue(count), "le", FormatGoFloat(le));
      }
      AppendSampleLine(out_, std::string(name) + "_sum", labels, values, FormatValue(one.sum));
      AppendSampleLine(out_, std::string(name) + "_count", labels, values, FormatValue(one.count));
    }
  }
  std::string Take() { return std::move(out_); }

 private:
  void Family(std::string_view name, std::string_view help, std::string_view type,
              const std::vector<std::string>& labels, const Sums& sums) {
    if (sums.by_labels.empty()) return;
    AppendFamilyHeader(out_, name, help, type);
    for (const auto& [values, value] : sums.by_labels) {
      AppendSampleLine(out_, name, labels, values, FormatValue(value));
    }
  }
  std::string out_;
};

// The samples of `family` (a counter or gauge), summed into label values chosen by `key`;
// a key of nullopt drops the sample.
template <typename Key>
Sums SumBy(const ParsedText& ours, std::string_view family, Key key) {
  Sums sums;
  if (family.empty()) return sums;
  for (const ParsedSeries& series : ours.series) {
    if (series.name != family) continue;
    std::optional<LabelValues> labels = key(series);
    if (labels) sums.Add(std::move(*labels), series.value);
  }
  return sums;
}

// The histogram `family`, its series summed into label values chosen by `key`.
template <typename Key>
HistogramSums HistogramBy(const ParsedText& ours, std::string_view family, Key key) {
  HistogramSums sums;
  if (family.empty()) return sums;
  const std::string bucket = std::string(family) + "_bucket";
  const std::string sum = std::string(family) + "_sum";
  const std::string count = std::string(family) + "_count";
  for (const ParsedSeries& series : ours.series) {
    if (series.name != bucket && series.name != sum && series.name != count) continue;
    HistogramSums::One& one = sums.by_labels[key(series)];
    if (series.name == sum) {
      one.sum += series.value;
    } else if (series.name == count) {
      one.count += series.value;
    } else {
      const std::string le(series.Label("le"));
      one.buckets[le == "+Inf" ? std::numeric_limits<double>::infinity()
                               : std::strtod(le.c_str(), nullptr)] += series.value;
    }
  }
  return sums;
}

// The value of the series written `key` (`name` or `name{a="x"}`), 0 when absent.
std::optional<double> Sample(const ParsedText& ours, std::string_view key) {
  if (key.empty()) return std::nullopt;
  const auto it = ours.samples.find(std::string(key));
  if (it == ours.samples.end()) return std::nullopt;
  return it->second;
}

void DnsFamilies(const ParsedText& ours, const CorednsSources& s, Writer& out) {
  const std::string zone(kRootZone);
  out.Counter("coredns_dns_requests_total",
              "Counter of DNS requests made per zone and type (kdns: answered queries).",
              {"server", "zone", "type"}, SumBy(ours, s.queries, [&](const ParsedSeries& series) {
                return LabelValues{s.server, zone, std::string(series.Label("type"))};
              }));
  out.Counter("coredns_dns_responses_total", "Counter of response status codes.",
              {"server", "zone", "rcode"}, SumBy(ours, s.queries, [&](const ParsedSeries& series) {
                return LabelValues{s.server, zone, std::string(series.Label("rcode"))};
              }));
  out.Histogram("coredns_dns_request_duration_seconds",
                "Histogram of the time (in seconds) each request took per zone.",
                {"server", "zone"}, HistogramBy(ours, s.duration, [&](const ParsedSeries&) {
                  return LabelValues{s.server, zone};
                }));
}

void CacheFamilies(const ParsedText& ours, const CorednsSources& s, Writer& out) {
  const std::string zone(kRootZone);
  const std::optional<double> entries = Sample(ours, s.cache_entries);
  const std::optional<double> negative = Sample(ours, s.cache_negative_entries);
  const std::optional<double> hits = Sample(ours, s.cache_hits);
  const std::optional<double> misses = Sample(ours, s.cache_misses);
  if (entries) {
    Sums sums;
    sums.Add({s.server, "denial", zone}, negative.value_or(0));
    sums.Add({s.server, "success", zone}, *entries - negative.value_or(0));
    out.Gauge("coredns_cache_entries", "The number of elements in the cache.",
              {"server", "type", "zones"}, sums);
  }
  if (hits) {
    // Our hit counter does not tell positive from negative answers: all are "success".
    Sums sums;
    sums.Add({s.server, "success", zone}, *hits);
    out.Counter("coredns_cache_hits_total", "The count of cache hits.", {"server", "type", "zones"},
                sums);
  }
  if (misses) {
    Sums sums;
    sums.Add({s.server, zone}, *misses);
    out.Counter("coredns_cache_misses_total", "The count of cache misses.", {"server", "zones"},
                sums);
  }
  if (hits && misses) {
    Sums sums;
    sums.Add({s.server, zone}, *hits + *misses);
    out.Counter("coredns_cache_requests_total", "The count of cache requests.", {"server", "zones"},
                sums);
  }
}

void ForwardFamilies(const ParsedText& ours, const CorednsSources& s, Writer& out) {
  auto to = [](const ParsedSeries& series) {
    return std::optional<LabelValues>(LabelValues{CorednsUpstreamName(series.Label("upstream"))});
  };
  const std::string& prefix = s.upstream_prefix;
  if (!prefix.empty()) {
    out.Counter("coredns_forward_requests_total", "Counter of requests made per upstream.", {"to"},
                SumBy(ours, prefix + "_queries_total", to));
    out.Counter(
        "coredns_forward_responses_total", "Counter of responses received per upstream.",
        {"rcode", "to"}, SumBy(ours, prefix + "_replies_total", [](const ParsedSeries& series) {
          return std::optional<LabelValues>(LabelValues{
              std::string(series.Label("rcode")), CorednsUpstreamName(series.Label("upstream"))});
        }));
    out.Histogram("coredns_forward_request_duration_seconds",
                  "Histogram of the time each request took.", {"to"},
                  HistogramBy(ours, prefix + "_rtt_seconds", [](const ParsedSeries& series) {
                    return LabelValues{CorednsUpstreamName(series.Label("upstream"))};
                  }));
    // CoreDNS health-checks an upstream after a failed try; ours are tries that got no
    // reply in time, the same signal: the upstream is not answering.
    out.Counter("coredns_forward_healthcheck_failures_total",
                "Counter of the number of failed healthchecks (kdns: tries that timed out).",
                {"to"}, SumBy(ours, prefix + "_timeouts_total", to));
  }
  if (const std::optional<double> down = Sample(ours, s.all_upstreams_down)) {
    Sums sums;
    sums.Add({}, *down);
    out.Counter("coredns_forward_healthcheck_broken_total",
                "Counter of the number of complete failures of the healthchecks.", {}, sums);
  }
  if (const std::optional<double> rejected = Sample(ours, s.forward_rejected)) {
    Sums sums;
    sums.Add({}, *rejected);
    out.Counter("coredns_forward_max_concurrent_rejects_total",
                "Counter of the number of queries rejected because the concurrent queries were "
                "at maximum.",
                {}, sums);
  }
}

}  // namespace

bool ParseMetricsCompat(std::string_view text, MetricsCompat* compat) {
  if (text == "none") {
    *compat = MetricsCompat::kNone;
  } else if (text == "coredns") {
    *compat = MetricsCompat::kCoredns;
  } else {
    return false;
  }
  return true;
}

std::string CorednsUpstreamName(std::string_view upstream) {
  if (const size_t scheme = upstream.find("://"); scheme != std::string_view::npos) {
    upstream.remove_prefix(scheme + 3);
  }
  const size_t hash = upstream.rfind('#');
  if (hash == std::string_view::npos) return std::string(upstream);
  const std::string_view host = upstream.substr(0, hash);
  const std::string_view port = upstream.substr(hash + 1);
  const bool bracket = host.find(':') != std::string_view::npos && !host.starts_with('[');
  std::string out;
  if (bracket) out += '[';
  out += host;
  if (bracket) out += ']';
  out += ':';
  out += port;
  return out;
}

std::string CorednsFamilies(const ParsedText& ours, const CorednsSources& sources) {
  Writer out;
  DnsFamilies(ours, sources, out);
  CacheFamilies(ours, sources, out);
  ForwardFamilies(ours, sources, out);
  // A C++ program has no panic to recover from: a crash ends the process, and shows as a
  // container restart (or the nanny's restart of frontend-cache). Exported so alerts on it
  // evaluate (to zero) instead of finding nothing.
  Sums panics;
  panics.Add({}, 0);
  out.Counter("coredns_panics_total", "A metrics that counts the number of panics (kdns: none).",
              {}, panics);
  return out.Take();
}

std::string WithCorednsFamilies(std::string text, const CorednsSources& sources) {
  const std::optional<ParsedText> ours = ParseText(text);
  if (!ours) return text;
  text += CorednsFamilies(*ours, sources);
  return text;
}

}  // namespace kdns::metrics

// A small reader of the Prometheus text exposition format: it turns a /metrics body (ours,
// or a real kube-dns sidecar's) back into values, so tests assert on numbers rather than on
// whole texts, and coredns_compat.h derives CoreDNS's families from ours. Strict about what
// Render() writes (names, label escaping, numbers, one HELP and TYPE per family, no repeated
// series); not a full Prometheus parser (timestamps are read and dropped). Pure, any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kdns::metrics {

// One sample line, read back: `name{a="x"} 1` is {"name", {{"a", "x"}}, 1}.
struct ParsedSeries {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // As written, values unescaped.
  double value = 0;

  // The value of label `name`, or "" when the series has none (as PromQL reads it).
  std::string_view Label(std::string_view label_name) const;
};

struct ParsedText {
  // Series key → value. The key is the name followed by the labels as written, re-escaped:
  // `requests_total{rcode="NOERROR",type="A"}`, or just `up` without labels.
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;  // Family name → "counter", "gauge", ...
  std::map<std::string, std::string> helps;  // Family name → unescaped help text.
  std::vector<ParsedSeries> series;          // Every sample line, in the text's order.
};

// nullopt if any line is malformed, with the line number and reason in *error.
[[nodiscard]] std::optional<ParsedText> ParseText(std::string_view text,
                                                  std::string* error = nullptr);

}  // namespace kdns::metrics

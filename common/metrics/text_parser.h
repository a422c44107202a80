// A small reader of the Prometheus text exposition format, for tests: it turns a /metrics
// body (ours, or a real kube-dns sidecar's) back into values, so tests assert on numbers
// rather than on whole texts. Strict about what Render() writes (names, label escaping,
// numbers, one HELP and TYPE per family, no repeated series); not a full Prometheus parser
// (timestamps are read and dropped). Pure, any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kdns::metrics {

struct ParsedText {
  // Series key → value. The key is the name followed by the labels as written, re-escaped:
  // `requests_total{rcode="NOERROR",type="A"}`, or just `up` without labels.
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;  // Family name → "counter", "gauge", ...
  std::map<std::string, std::string> helps;  // Family name → unescaped help text.
};

// nullopt if any line is malformed, with the line number and reason in *error.
[[nodiscard]] std::optional<ParsedText> ParseText(std::string_view text,
                                                  std::string* error = nullptr);

}  // namespace kdns::metrics

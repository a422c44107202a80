#include "common/metrics/text_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "common/metrics/text_format.h"

namespace kdns::metrics {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':';
}

// A cursor over one line; every method consumes on success only.
class LineReader {
 public:
  explicit LineReader(std::string_view line) : rest_(line) {}

  bool AtEnd() const { return rest_.empty(); }
  bool Consume(char c) {
    if (rest_.empty() || rest_[0] != c) return false;
    rest_.remove_prefix(1);
    return true;
  }
  // The longest prefix of name characters ([a-zA-Z0-9_:]), possibly empty.
  std::string_view Name() {
    size_t n = 0;
    while (n < rest_.size() && IsNameChar(rest_[n])) ++n;
    return Take(n);
  }
  // Up to the next space or the end.
  std::string_view Word() { return Take(std::min(rest_.find(' '), rest_.size())); }
  std::string_view Rest() { return Take(rest_.size()); }
  // A quoted label value after its opening quote, through the closing quote, unescaped.
  std::optional<std::string> QuotedValue() {
    std::string value;
    for (size_t i = 0; i < rest_.size(); ++i) {
      const char c = rest_[i];
      if (c == '"') {
        rest_.remove_prefix(i + 1);
        return value;
      }
      if (c != '\\') {
        value.push_back(c);
        continue;
      }
      if (++i == rest_.size()) return std::nullopt;
      switch (rest_[i]) {
        case '\\':
          value.push_back('\\');
          break;
        case '"':
          value.push_back('"');
          break;
        case 'n':
          value.push_back('\n');
          break;
        default:
          return std::nullopt;
      }
    }
    return std::nullopt;
  }

 private:
  std::string_view Take(size_t n) {
    const std::string_view taken = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return taken;
  }
  std::string_view rest_;
};

std::optional<double> ParseNumber(std::string_view text) {
  if (text == "+Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text.starts_with('+')) text.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  if (std::isnan(value) || std::isinf(value)) return std::nullopt;  // Only the spellings above.
  return value;
}

std::string UnescapeHelp(std::string_view help) {
  std::string out;
  for (size_t i = 0; i < help.size(); ++i) {
    if (help[i] == '\\' && i + 1 < help.size() && (help[i + 1] == '\\' || help[i + 1] == 'n')) {
      out.push_back(help[++i] == 'n' ? '\n' : '\\');
    } else {
      out.push_back(help[i]);
    }
  }
  return out;
}

// "# HELP name text" or "# TYPE name type"; other comments are ignored.
std::optional<std::string> ParseComment(std::string_view line, ParsedText& parsed) {
  LineReader reader(line.substr(1));
  reader.Consume(' ');
  const std::string_view keyword = reader.Word();
  if (keyword != "HELP" && keyword != "TYPE") return std::nullopt;
  if (!reader.Consume(' ')) return "no metric name after " + std::string(keyword);
  const std::string name(reader.Name());
  if (!IsValidMetricName(name) || (!reader.AtEnd() && !reader.Consume(' '))) {
    return "bad metric name in " + std::string(keyword);
  }
  const std::string_view rest = reader.Rest();
  if (keyword == "HELP") {
    if (!parsed.helps.emplace(name, UnescapeHelp(rest)).second) return "second HELP for " + name;
    return std::nullopt;
  }
  if (rest != "counter" && rest != "gauge" && rest != "histogram" && rest != "summary" &&
      rest != "untyped") {
    return "unknown type '" + std::string(rest) + "'";
  }
  if (!parsed.types.emplace(name, std::string(rest)).second) return "second TYPE for " + name;
  return std::nullopt;
}

std::optional<std::string> ParseSample(std::string_view line, ParsedText& parsed) {
  LineReader reader(line);
  std::string key(reader.Name());
  if (!IsValidMetricName(key)) return "bad metric name";
  ParsedSeries series;
  series.name = key;
  if (reader.Consume('{')) {
    key.push_back('{');
    bool first = true;
    while (!reader.Consume('}')) {
      const std::string_view label = reader.Name();
      if (!IsValidLabelName(label) || !reader.Consume('=') || !reader.Consume('"')) {
        return "bad label in " + key;
      }
      const std::optional<std::string> value = reader.QuotedValue();
      if (!value) return "bad label value in " + key;
      if (!first) key.push_back(',');
      first = false;
      key.append(label);
      key += "=\"";
      AppendEscapedLabelValue(key, *value);
      key.push_back('"');
      series.labels.emplace_back(label, *value);
      if (reader.Consume('}')) break;
      if (!reader.Consume(',')) return "unterminated labels in " + key;
    }
    key.push_back('}');
  }
  if (!reader.Consume(' ')) return "no value for " + key;
  const std::optional<double> value = ParseNumber(reader.Word());
  if (!value) return "bad value for " + key;
  if (reader.Consume(' ') && !ParseNumber(reader.Rest())) return "bad timestamp for " + key;
  if (!reader.AtEnd()) return "trailing text after " + key;
  if (!parsed.samples.emplace(key, *value).second) return "repeated series " + key;
  series.value = *value;
  parsed.series.push_back(std::move(series));
  return std::nullopt;
}

}  // namespace

std::string_view ParsedSeries::Label(std::string_view label_name) const {
  for (const auto& [label, label_value] : labels) {
    if (label == label_name) return label_value;
  }
  return {};
}

std::optional<ParsedText> ParseText(std::string_view text, std::string* error) {
  ParsedText parsed;
  int line_number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;
    if (line.empty()) continue;
    std::optional<std::string> problem =
        line[0] == '#' ? ParseComment(line, parsed) : ParseSample(line, parsed);
    if (problem) {
      if (error) *error = "line " + std::to_string(line_number) + ": " + *problem;
      return std::nullopt;
    }
  }
  return parsed;
}

}  // namespace kdns::metrics

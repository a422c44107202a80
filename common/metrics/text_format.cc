#include "common/metrics/text_format.h"

#include <glog/logging.h>

#include <charconv>
#include <cmath>
#include <cstdint>

namespace kdns::metrics {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// Go's fixed ('%f'-like) rendering of `digits` (no sign, no point) scaled so the first digit
// has decimal exponent `exp`, for -4 <= exp < 6.
std::string FixedFromDigits(std::string_view digits, int exp) {
  std::string out;
  if (exp < 0) {
    out = "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out.append(digits);
    return out;
  }
  const size_t int_digits = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_digits) {
    out.append(digits);
    out.append(int_digits - digits.size(), '0');
  } else {
    out.append(digits.substr(0, int_digits));
    out.push_back('.');
    out.append(digits.substr(int_digits));
  }
  return out;
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty() || IsAsciiDigit(name[0])) return false;
  for (char c : name) {
    if (!IsAsciiLetter(c) && !IsAsciiDigit(c) && c != '_' && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || IsAsciiDigit(name[0]) || name.starts_with("__")) return false;
  for (char c : name) {
    if (!IsAsciiLetter(c) && !IsAsciiDigit(c) && c != '_') return false;
  }
  return true;
}

std::string BuildFqName(std::string_view name_space, std::string_view subsystem,
                        std::string_view name) {
  if (name.empty()) return {};
  std::string out;
  for (std::string_view part : {name_space, subsystem, name}) {
    if (part.empty()) continue;
    if (!out.empty()) out.push_back('_');
    out.append(part);
  }
  return out;
}

std::string FormatGoFloat(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";  // Also -0, as the Go client does.

  // Shortest round-trip digits in scientific form, e.g. "-1.234567e+06"; the exponent has at
  // least two digits, as in Go.
  char buf[64];
  const auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  CHECK(ec == std::errc()) << "to_chars failed";
  const std::string_view scientific(buf, end - buf);
  const size_t e_pos = scientific.find('e');
  const char* exp_begin = buf + e_pos + 1;
  if (*exp_begin == '+') ++exp_begin;
  int exp = 0;
  CHECK(std::from_chars(exp_begin, end, exp).ec == std::errc()) << "no exponent in " << scientific;
  if (exp < -4 || exp >= 6) return std::string(scientific);

  std::string digits;
  for (char c : scientific.substr(0, e_pos)) {
    if (IsAsciiDigit(c)) digits.push_back(c);
  }
  std::string out = value < 0 ? "-" : "";
  out += FixedFromDigits(digits, exp);
  return out;
}

std::string FormatValue(double value) {
  constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53.
  if (std::isfinite(value) && std::trunc(value) == value && std::fabs(value) < kExactIntegerLimit) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(value));
    CHECK(ec == std::errc()) << "to_chars failed";
    return std::string(buf, end);
  }
  return FormatGoFloat(value);
}

void AppendEscapedHelp(std::string& out, std::string_view help) {
  for (char c : help) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out.push_back(c);
    }
  }
}

void AppendEscapedLabelValue(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out.push_back(c);
    }
  }
}

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type) {
  out += "# HELP ";
  out += name;
  out.push_back(' ');
  AppendEscapedHelp(out, help);
  out += "\n# TYPE ";
  out += name;
  out.push_back(' ');
  out += type;
  out.push_back('\n');
}

void AppendSampleLine(std::string& out, std::string_view name,
                      std::span<const std::string> label_names,
                      std::span<const std::string> label_values, std::string_view value,
                      std::string_view extra_label_name, std::string_view extra_label_value) {
  CHECK_EQ(label_names.size(), label_values.size());
  out += name;
  const bool has_labels = !label_names.empty() || !extra_label_name.empty();
  if (has_labels) out.push_back('{');
  for (size_t i = 0; i < label_names.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += label_names[i];
    out += "=\"";
    AppendEscapedLabelValue(out, label_values[i]);
    out.push_back('"');
  }
  if (!extra_label_name.empty()) {
    if (!label_names.empty()) out.push_back(',');
    out += extra_label_name;
    out += "=\"";
    AppendEscapedLabelValue(out, extra_label_value);
    out.push_back('"');
  }
  if (has_labels) out.push_back('}');
  out.push_back(' ');
  out += value;
  out.push_back('\n');
}

}  // namespace kdns::metrics

#include "common/base/duration.h"

#include <cctype>
#include <cmath>
#include <string>

namespace kdns {

std::optional<uint64_t> ParseDurationMs(std::string_view text) {
  if (text == "0") return 0;
  if (text.empty()) return std::nullopt;
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (i == start) return std::nullopt;
    std::string number(text.substr(start, i - start));
    if (number.find('.') != number.rfind('.')) return std::nullopt;
    double value = std::stod(number);
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else {
      return std::nullopt;
    }
    total_ms += value * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e15) return std::nullopt;
  return static_cast<uint64_t>(std::llround(total_ms));
}

}  // namespace kdns

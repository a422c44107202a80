#include "common/base/port.h"

#include <charconv>

namespace kdns {

std::optional<uint16_t> ParsePort(std::string_view text, PortZero zero) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value > 65535) return std::nullopt;
  if (value == 0 && zero == PortZero::kRefuse) return std::nullopt;
  return static_cast<uint16_t>(value);
}

}  // namespace kdns

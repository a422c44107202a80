// Trim: `text` without the leading and trailing characters in `chars` (spaces by default),
// as a view into it. Pure; any thread.
#pragma once

#include <string_view>

namespace kdns {

inline std::string_view Trim(std::string_view text, std::string_view chars = " ") {
  const size_t start = text.find_first_not_of(chars);
  if (start == std::string_view::npos) return {};
  return text.substr(start, text.find_last_not_of(chars) - start + 1);
}

}  // namespace kdns

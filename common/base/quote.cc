#include "common/base/quote.h"

#include <cstdio>

namespace kdns {

std::string QuoteForLog(std::string_view text, size_t max_chars) {
  std::string out = "\"";
  const size_t shown = text.size() < max_chars ? text.size() : max_chars;
  for (size_t i = 0; i < shown; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out.append(escaped);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  if (shown < text.size()) out.append("...");
  return out;
}

}  // namespace kdns

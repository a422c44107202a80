// NextLine: takes the next line off the front of a text (a hosts file, resolv.conf, a
// /proc status file, a watch-stream body), for parsers that read line by line. Pure; any
// thread.
#pragma once

#include <string_view>

namespace kdns {

// The text up to the first '\n' (without it), which is taken off the front of *text with its
// '\n'; the whole rest when no '\n' is left (a last line without one).
inline std::string_view NextLine(std::string_view* text) {
  const size_t newline = text->find('\n');
  const std::string_view line = text->substr(0, newline);
  text->remove_prefix(newline == std::string_view::npos ? text->size() : newline + 1);
  return line;
}

}  // namespace kdns

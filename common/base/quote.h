// QuoteForLog: a string from outside (an object's field, a name from a packet) as it may
// appear in a log line or an error message: in double quotes, with '"' and '\' escaped,
// control and non-ASCII octets as \xHH, and cut after `max_chars` with "..." so one huge
// value cannot flood the log. Pure; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kdns {

std::string QuoteForLog(std::string_view text, size_t max_chars = 64);

}  // namespace kdns

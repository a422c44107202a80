// Fuzzes http::RequestParser, which sees raw bytes from any client of the HTTP endpoints.
// Besides crashes and sanitizer reports it checks the parser's contract: a complete
// request never claims more bytes than it was given, its path is an origin path, and
// feeding a prefix of the input never completes with a different request.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/http/request_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kdns::http::RequestParser;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  RequestParser::Limits limits;
  limits.max_header_bytes = 2048;
  limits.max_body_bytes = 64;
  RequestParser parser(limits);
  auto result = parser.Parse(input);
  switch (result.status) {
    case RequestParser::Status::kComplete: {
      if (result.consumed == 0 || result.consumed > size) abort();
      const auto& path = result.request.path;
      if (path.empty() || path[0] != '/') abort();
      if (path.find('?') != std::string::npos) abort();
      // The same request parses from exactly its own bytes.
      auto again = parser.Parse(input.substr(0, result.consumed));
      if (again.status != RequestParser::Status::kComplete || again.consumed != result.consumed ||
          again.request.path != path) {
        abort();
      }
      break;
    }
    case RequestParser::Status::kError:
      if (result.error_status < 400 || result.error_status > 505) abort();
      break;
    case RequestParser::Status::kIncomplete:
      // Bounded buffering: past the head limit plus a body, the parser has decided.
      if (size > limits.max_header_bytes + limits.max_body_bytes) abort();
      break;
  }
  return 0;
}

// RequestParser: parses one HTTP/1.1 (or 1.0) request head from the bytes buffered on a
// connection (RFC 9112). Pure: no I/O, no logging; fuzzed (test/fuzz/http_request_fuzzer).
//
// It is re-run on the whole buffer as bytes arrive, which is fine because the buffer is
// bounded by Limits::max_header_bytes (8 KiB): the server serves tiny GETs for /metrics and
// health checks. Accepts CRLF and bare LF line ends (RFC 9112 2.2). Rejects what it does not
// serve: obsolete line folding, whitespace before a header's colon, control characters,
// request bodies sent chunked (501), bodies over Limits::max_body_bytes (413); a small
// Content-Length body is consumed (and discarded) so the connection stays in sync.
// HTTP/1.1 requires Host (RFC 9112 3.2). The path is not percent-decoded: routes match the
// raw bytes, so no decoding can smuggle "/../" or NUL past a route.
//
// Thread: a RequestParser is a const value, usable from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kdns::http {

struct Request {
  std::string method;     // as sent: "GET", "HEAD", ...
  std::string target;     // the request-target as sent
  std::string path;       // target up to '?', never empty, starts with '/'
  std::string query;      // after '?', without it
  int version_minor = 1;  // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  bool keep_alive = true;

  // The first header with this (lower-case) name, or "" if none.
  std::string_view Header(std::string_view lower_name) const;
};

class RequestParser {
 public:
  struct Limits {
    size_t max_header_bytes = 8 * 1024;  // request line + headers + blank line
    size_t max_headers = 64;
    size_t max_body_bytes = 0;  // GET/HEAD only: any body is refused with 413 by default
  };

  enum class Status { kIncomplete, kComplete, kError };
  struct Result {
    Status status = Status::kIncomplete;
    size_t consumed = 0;   // kComplete: bytes of this request (head and body)
    int error_status = 0;  // kError: the HTTP status to answer with (400, 413, 431, ...)
    Request request;       // kComplete only
  };

  RequestParser() = default;
  explicit RequestParser(const Limits& limits) : limits_(limits) {}

  Result Parse(std::string_view buffer) const;

 private:
  Limits limits_;
};

}  // namespace kdns::http

// Response: what a route handler returns, and its serialization to HTTP/1.1 bytes.
// Pure. Thread: a value type.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kdns::http {

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Extra headers. Names and values with CR, LF or NUL are dropped when serialized
  // (header injection); Content-Length and Connection are always the server's.
  std::vector<std::pair<std::string, std::string>> headers;

  static Response Text(int status, std::string body);
};

// "OK", "Not Found", ...; "Unknown" for codes we never send.
std::string_view ReasonPhrase(int status);

enum class BodyMode { kInclude, kOmit };  // kOmit for HEAD: headers only (RFC 9110 9.3.2)
enum class ConnectionMode { kKeepAlive, kClose };

std::string SerializeResponse(const Response& response, BodyMode body_mode,
                              ConnectionMode connection_mode);

}  // namespace kdns::http

#include "common/http/response.h"

#include <algorithm>

namespace kdns::http {
namespace {

bool SafeHeaderText(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n' || c == 0; });
}

}  // namespace

Response Response::Text(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string SerializeResponse(const Response& response, BodyMode body_mode,
                              ConnectionMode connection_mode) {
  std::string out;
  out.reserve(128 + response.body.size());
  int status = (response.status >= 100 && response.status <= 999) ? response.status : 500;
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += ReasonPhrase(status);
  out += "\r\n";
  if (!response.content_type.empty() && SafeHeaderText(response.content_type)) {
    out += "Content-Type: " + response.content_type + "\r\n";
  }
  // HEAD carries the length the GET body would have (RFC 9110 8.6).
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  out += connection_mode == ConnectionMode::kClose ? "Connection: close\r\n"
                                                   : "Connection: keep-alive\r\n";
  for (const auto& [name, value] : response.headers) {
    if (name.empty() || !SafeHeaderText(name) || !SafeHeaderText(value)) continue;
    out.append(name).append(": ").append(value).append("\r\n");
  }
  out += "\r\n";
  if (body_mode == BodyMode::kInclude) out += response.body;
  return out;
}

}  // namespace kdns::http

#include "common/http/response.h"

#include <catch2/catch.hpp>

namespace kdns::http {
namespace {

TEST_CASE("Responses serialize with length, connection and extra headers", "[http]") {
  Response r = Response::Text(200, "hello");
  r.headers.emplace_back("Cache-Control", "no-store");
  CHECK(SerializeResponse(r, BodyMode::kInclude, ConnectionMode::kKeepAlive) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n"
        "Connection: keep-alive\r\nCache-Control: no-store\r\n\r\nhello");
}

TEST_CASE("HEAD responses keep the length but omit the body", "[http]") {
  auto bytes = SerializeResponse(Response::Text(404, "Not Found\n"), BodyMode::kOmit,
                                 ConnectionMode::kClose);
  CHECK(bytes.find("HTTP/1.1 404 Not Found\r\n") == 0);
  CHECK(bytes.find("Content-Length: 10\r\n") != std::string::npos);
  CHECK(bytes.find("Connection: close\r\n") != std::string::npos);
  CHECK(bytes.substr(bytes.size() - 4) == "\r\n\r\n");
}

TEST_CASE("Header values with CR or LF are dropped, not injected", "[http]") {
  Response r;
  r.headers.emplace_back("X-Evil", "a\r\nSet-Cookie: x");
  r.headers.emplace_back("X-Fine", "ok");
  auto bytes = SerializeResponse(r, BodyMode::kInclude, ConnectionMode::kKeepAlive);
  CHECK(bytes.find("Set-Cookie") == std::string::npos);
  CHECK(bytes.find("X-Fine: ok\r\n") != std::string::npos);
}

}  // namespace
}  // namespace kdns::http

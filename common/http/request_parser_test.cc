#include "common/http/request_parser.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::http {
namespace {

using Status = RequestParser::Status;

TEST_CASE("RequestParser parses valid request heads", "[http][parser]") {
  auto [text, method, path, query, minor, keep_alive] =
      GENERATE(table<std::string, std::string, std::string, std::string, int, bool>({
          {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "/metrics", "", 1, true},
          {"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD", "/healthz", "", 1, true},
          {"GET /a?b=c&d HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "/a", "b=c&d", 1, true},
          {"GET / HTTP/1.0\r\n\r\n", "GET", "/", "", 0, false},
          {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", "GET", "/", "", 0, true},
          {"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET", "/", "", 1, false},
          {"GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, CLOSE\r\n\r\n", "GET", "/", "", 1, false},
          {"GET / HTTP/1.1\nHost: x\n\n", "GET", "/", "", 1, true},  // bare LF
          {"\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "/", "", 1, true},
          {"GET / HTTP/1.9\r\nHost: x\r\n\r\n", "GET", "/", "", 1, true},
          {"GET http://kdns:8080/metrics?x HTTP/1.1\r\nHost: kdns\r\n\r\n", "GET", "/metrics", "x",
           1, true},
          {"GET http://kdns HTTP/1.1\r\nHost: kdns\r\n\r\n", "GET", "/", "", 1, true},
          {"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "POST", "/x", "", 1,
           true},
          {"GET /%2e%2e/ HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "/%2e%2e/", "", 1, true},
          {"GET / HTTP/1.1\r\nHost:x\r\nX-Empty:\r\nX-Tab:\tv\t\r\n\r\n", "GET", "/", "", 1, true},
      }));
  CAPTURE(text);
  RequestParser::Limits limits;
  limits.max_body_bytes = 1024;
  auto result = RequestParser(limits).Parse(text);
  REQUIRE(result.status == Status::kComplete);
  CHECK(result.consumed == text.size());
  CHECK(result.request.method == method);
  CHECK(result.request.path == path);
  CHECK(result.request.query == query);
  CHECK(result.request.version_minor == minor);
  CHECK(result.request.keep_alive == keep_alive);
}

TEST_CASE("RequestParser rejects malformed requests with the right status", "[http][parser]") {
  auto [text, status] = GENERATE(table<std::string, int>({
      {"GET /\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},
      {"GET / http/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
      {"GET / HTTP/1.1\r\n\r\n", 400},  // HTTP/1.1 without Host
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET metrics HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET /a\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},  // space before colon
      {"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400},
      {std::string("GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n", 29), 400},  // with a NUL
      {"GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"GET http:///x HTTP/1.1\r\nHost: x\r\n\r\n", 400},
  }));
  CAPTURE(text);
  RequestParser::Limits limits;
  limits.max_body_bytes = 1024;
  auto result = RequestParser(limits).Parse(text);
  REQUIRE(result.status == Status::kError);
  CHECK(result.error_status == status);
}

TEST_CASE("RequestParser bounds the head's size and header count", "[http][parser]") {
  RequestParser::Limits limits;
  limits.max_header_bytes = 256;
  limits.max_headers = 4;
  RequestParser parser(limits);
  SECTION("a long request line is 414, even before its end arrives") {
    CHECK(parser.Parse("GET /" + std::string(300, 'a')).error_status == 414);
    CHECK(parser.Parse("GET /" + std::string(300, 'a') + " HTTP/1.1\r\n").error_status == 414);
  }
  SECTION("a long header section is 431") {
    std::string head = "GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(300, 'v');
    CHECK(parser.Parse(head).error_status == 431);
  }
  SECTION("too many headers is 431") {
    std::string head = "GET / HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 5; ++i) head += "X" + std::to_string(i) + ": v\r\n";
    CHECK(parser.Parse(head + "\r\n").error_status == 431);
  }
  SECTION("exactly at the limits is fine") {
    std::string head = "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    CHECK(parser.Parse(head).status == Status::kComplete);
  }
}

TEST_CASE("RequestParser gives the same answer for input split at every byte", "[http][parser]") {
  const std::string text =
      "GET /healthcheck/kubedns?verbose=1 HTTP/1.1\r\nHost: localhost:10054\r\n"
      "User-Agent: test\r\nAccept: */*\r\n\r\nGET /next HTTP/1.1\r\n";
  const size_t head_end = text.find("\r\n\r\n") + 4;
  RequestParser parser;
  for (size_t n = 0; n <= text.size(); ++n) {
    CAPTURE(n);
    auto result = parser.Parse(std::string_view(text).substr(0, n));
    if (n < head_end) {
      REQUIRE(result.status == Status::kIncomplete);
    } else {
      REQUIRE(result.status == Status::kComplete);
      CHECK(result.consumed == head_end);  // the pipelined next request is left alone
      CHECK(result.request.path == "/healthcheck/kubedns");
      CHECK(result.request.query == "verbose=1");
      CHECK(result.request.Header("user-agent") == "test");
      CHECK(result.request.Header("host") == "localhost:10054");
    }
  }
}

TEST_CASE("RequestParser waits for a small body and consumes it", "[http][parser]") {
  RequestParser::Limits limits;
  limits.max_body_bytes = 16;
  RequestParser parser(limits);
  std::string text = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody";
  CHECK(parser.Parse(text.substr(0, text.size() - 1)).status == Status::kIncomplete);
  auto result = parser.Parse(text + "GET");
  REQUIRE(result.status == Status::kComplete);
  CHECK(result.consumed == text.size());
}

}  // namespace
}  // namespace kdns::http

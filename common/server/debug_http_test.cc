#include "common/server/debug_http.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/http/http_test_util.h"
#include "common/limits/limits.h"

namespace kdns::server {
namespace {

using http::testing::BlockingGet;

const loop::SocketAddress kAnyLoopbackPort = *loop::SocketAddress::Parse("127.0.0.1:0");

RateLimits MakeLimits() {
  RateLimits limits;
  std::string error;
  REQUIRE(MakeRateLimits(RateLimitFlags{}, nullptr, &limits, &error));
  return limits;
}

TEST_CASE("a debug address is an IP and a port, and loopback is the quiet choice", "[debug_http]") {
  std::optional<loop::SocketAddress> address;
  std::string error;
  SECTION("loopback, IPv4 or IPv6") {
    const std::string value = GENERATE("127.0.0.1:10057", "[::1]:10057", "127.0.0.1:0");
    REQUIRE(ParseDebugAddress(value, kDebugAddressFlag, &address, &error));
    REQUIRE(address.has_value());
    CHECK(address->ToString() == value);
    CHECK(DebugAddressWarning(kDebugAddressFlag, *address).empty());
  }
  SECTION("any other address is accepted with a warning") {
    const std::string value = GENERATE("0.0.0.0:10057", "10.0.0.7:10057", "[::]:10057");
    REQUIRE(ParseDebugAddress(value, kDebugAddressFlag, &address, &error));
    const std::string warning = DebugAddressWarning(kDebugAddressFlag, *address);
    CHECK(warning.find("--debug-address=" + value + " is not loopback") == 0);
  }
  SECTION("a bad value names the flag it came from") {
    const std::string value = GENERATE("10057", "", "localhost:10057", "127.0.0.1:99999");
    CHECK_FALSE(ParseDebugAddress(value, "cache-dump-address", &address, &error));
    CHECK(error ==
          "--cache-dump-address: not an IP address and port (127.0.0.1:10057): \"" + value + "\"");
    CHECK_FALSE(address.has_value());
  }
}

TEST_CASE("a debug address may not take a metrics or health port", "[debug_http]") {
  const auto at = [](const char* text) { return *loop::SocketAddress::Parse(text); };
  SECTION("the same port on the same or a wildcard address clashes") {
    const auto [debug, other] =
        GENERATE(table<const char*, const char*>({{"127.0.0.1:10055", "127.0.0.1:10055"},
                                                  {"127.0.0.1:10055", "0.0.0.0:10055"},
                                                  {"0.0.0.0:10055", "127.0.0.1:10055"}}));
    CHECK(DebugAddressClash(at(debug), "--metrics-port", at(other)) ==
          "--debug-address=" + std::string(debug) + " takes the port of --metrics-port (" + other +
              "): the debug data needs a port of its own");
  }
  SECTION("another port, another address or any free port does not") {
    const auto [debug, other] =
        GENERATE(table<const char*, const char*>({{"127.0.0.1:10057", "0.0.0.0:10055"},
                                                  {"127.0.0.1:10055", "10.0.0.7:10055"},
                                                  {"127.0.0.1:0", "127.0.0.1:0"}}));
    CHECK(DebugAddressClash(at(debug), "--metrics-port", at(other)).empty());
  }
}

TEST_CASE("the debug server serves /debug/top-clients", "[debug_http]") {
  RateLimits limits = MakeLimits();
  std::unique_ptr<http::ServerThread> debug = MakeDebugServer(kAnyLoopbackPort, limits.clients);
  std::string error;
  REQUIRE(debug->Start(&error));
  const std::string top = BlockingGet(debug->local_address(), "/debug/top-clients?n=5");
  CHECK(top.rfind("200 {\"tracked\":", 0) == 0);
  CHECK(top.find("\"clients\":[") != std::string::npos);
  CHECK(BlockingGet(debug->local_address(), "/metrics").rfind("404", 0) == 0);
  debug->Stop();
}

TEST_CASE("a port that is not the debug address refuses debug paths and counts them",
          "[debug_http]") {
  http::Server::Options options;
  options.bind_address = kAnyLoopbackPort;
  http::ServerThread published(options);
  published.Handle("/metrics", [](const http::Request&) { return http::Response::Text(200, ""); });
  RefuseDebugPaths(published);
  std::string error;
  REQUIRE(published.Start(&error));
  const std::string path = GENERATE("/debug/top-clients", "/debug/top-clients?n=100",
                                    "/debug/pprof", "/debug", "/cache", "/cache?x=1");
  const uint64_t before = limits::LimitHits(limits::Limit::kDebugOnPublishedPort);
  const std::string reply = BlockingGet(published.local_address(), path);
  CHECK(reply.rfind("404 ", 0) == 0);
  CHECK(reply.find("--debug-address") != std::string::npos);
  CHECK(limits::LimitHits(limits::Limit::kDebugOnPublishedPort) == before + 1);
  CHECK(BlockingGet(published.local_address(), "/metrics").rfind("200", 0) == 0);
  CHECK(limits::LimitHits(limits::Limit::kDebugOnPublishedPort) == before + 1);
  published.Stop();
}

}  // namespace
}  // namespace kdns::server

// CurlTransport: responses (head, body, streams), the requests it sends, and connections
// and their errors, against the real local server of curl_transport_testing.h.
#include "common/k8s/curl_transport.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/k8s/curl_transport_testing.h"

namespace kdns::k8s {
namespace {

using namespace curl_testing;  // NOLINT(google-build-using-namespace): the shared fixtures

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A JSON body arrives over HTTPS after its head, and the request completes",
                 "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, "/json", c);
  CHECK(c.callbacks() == 0);  // nothing from inside Get()
  Finish(loop, c);
  REQUIRE(c.done->ok());
  CHECK(c.done->status == 200);
  REQUIRE(c.head);
  CHECK(c.head->status == 200);
  CHECK(c.head->http_version == "1.1");
  CHECK(c.head->content_type == "application/json");
  CHECK_FALSE(c.head->retry_after_s);
  CHECK(c.body == "{\"kind\":\"ServiceList\",\"items\":[]}\n");
  CHECK(transport.active_requests() == 0);
  auto stats = transport.stats();
  CHECK(stats.requests_started == 1);
  CHECK(stats.requests_failed == 0);
  CHECK(stats.bytes_received == c.body.size());
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A large body arrives in pieces and complete",
                 "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, "/big?bytes=300000", c);
  Finish(loop, c);
  CHECK(c.done->ok());
  CHECK(c.body.size() == 300000);
  CHECK(c.pieces.size() > 1);
  CHECK(c.body.substr(0, 8) == "{\"n\":\"01");
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A watch stream's lines arrive before the response ends", "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  auto id = Get(transport, "/watch?lines=2&hold=1", c, /*timeout_ms=*/0);
  REQUIRE(RunUntil(
      loop, [&] { return std::count(c.body.begin(), c.body.end(), '\n') == 2; }, kWaitMs));
  CHECK(c.body ==
        "{\"type\":\"ADDED\",\"object\":{\"n\":0}}\n{\"type\":\"ADDED\",\"object\":{\"n\":1}}\n");
  CHECK_FALSE(c.done);  // the server holds the stream open
  CHECK(c.head->status == 200);

  int before = c.callbacks();
  inside_call = true;
  transport.Cancel(id);
  transport.Cancel(id);  // twice: ignored
  inside_call = false;
  CHECK(transport.active_requests() == 0);
  for (int i = 0; i < 10; ++i) loop.RunNoWait();
  CHECK(c.callbacks() == before);
  CHECK(transport.stats().requests_cancelled == 1);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A chunked stream delivers every chunk and ends cleanly", "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, "/watch?lines=4&interval_ms=20", c, /*timeout_ms=*/0);
  Finish(loop, c);
  CHECK(c.done->ok());
  CHECK(c.body.find("{\"n\":3}") != std::string::npos);
  CHECK(c.pieces.size() >= 2);  // 20 ms apart: not one read
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "Status, Retry-After and content type reach on_head",
                 "[curl]") {
  auto [path, status, retry_after] = GENERATE(table<std::string, int, std::optional<uint32_t>>({
      {"/status/401", 401, std::nullopt},
      {"/status/410", 410, std::nullopt},
      {"/status/429", 429, 7},
      {"/status/500", 500, std::nullopt},
      {"/status/503", 503, 7},
      {"/status/404", 404, std::nullopt},
  }));
  INFO(path);
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, path, c);
  Finish(loop, c);
  CHECK(c.done->ok());  // an HTTP error status is not a transport error
  CHECK(c.done->status == status);
  REQUIRE(c.head);
  CHECK(c.head->status == status);
  CHECK(c.head->content_type == "application/json");
  CHECK(c.head->retry_after_s == retry_after);
  CHECK(c.body.find("\"kind\": \"Status\"") != std::string::npos);
  CHECK(transport.stats().requests_failed == 0);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A Retry-After given as an HTTP date becomes seconds from now", "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, "/retry-date", c);
  Finish(loop, c);
  REQUIRE(c.head->retry_after_s);
  CHECK(*c.head->retry_after_s >= 50);
  CHECK(*c.head->retry_after_s <= 61);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "Requests carry Accept, User-Agent, the bearer token and accept gzip", "[curl]") {
  ApiConfig config = TlsConfig();
  config.token = "secret-token";
  CurlTransport transport(loop, config, TestOptions());
  Collected c;
  Get(transport, "/headers", c);
  Finish(loop, c);
  REQUIRE(c.done->ok());
  CHECK(c.body.find("\"accept\": \"application/json\"") != std::string::npos);
  CHECK(c.body.find("\"authorization\": \"Bearer secret-token\"") != std::string::npos);
  CHECK(c.body.find("\"user-agent\": \"kdns/") != std::string::npos);
  CHECK(c.body.find("gzip") != std::string::npos);

  Collected gz;
  Get(transport, "/gzip", gz);
  Finish(loop, gz);
  CHECK(gz.done->status == 200);
  CHECK(gz.body == "{\"compressed\":true}\n");
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "Without a token no Authorization header is sent",
                 "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, "/headers", c);
  Finish(loop, c);
  CHECK(c.body.find("authorization") == std::string::npos);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A 401 makes the next request re-read the token file",
                 "[curl]") {
  TempDir dir;
  std::string token_file = dir.File("token");
  WriteFile(token_file, "old-token\n");
  ManualClock clock(1000);
  ApiConfig config = TlsConfig();
  config.token_file = token_file;
  CurlTransport::Options options = TestOptions();
  options.clock = &clock;
  CurlTransport transport(loop, config, options);

  Collected first;
  Get(transport, "/protected/new-token", first);
  Finish(loop, first);
  CHECK(first.done->status == 401);
  CHECK(first.body.find("Bearer old-token") != std::string::npos);

  // Rotated; the clock has not moved, so only the 401 makes the transport look again.
  WriteFile(token_file, "new-token\n");
  Collected second;
  Get(transport, "/protected/new-token", second);
  Finish(loop, second);
  CHECK(second.done->status == 200);
  CHECK(second.body.find("Bearer new-token") != std::string::npos);

  // Unreadable now: the last good token stays.
  std::filesystem::remove(token_file);
  Collected third;
  Get(transport, "/protected/new-token", third);
  Finish(loop, third);
  CHECK(third.done->status == 200);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "A connection dropped mid-body is a transport error",
                 "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, "/drop", c);
  Finish(loop, c);
  INFO(c.done->transport_error);
  CHECK_FALSE(c.done->ok());
  CHECK(c.done->status == 200);
  CHECK(c.head->status == 200);
  CHECK(c.done->transport_error.rfind("connection closed mid-body: ", 0) == 0);
  CHECK(transport.stats().requests_failed == 1);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "timeout_ms ends a request that takes too long",
                 "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  Collected c;
  Get(transport, "/slow?delay_ms=5000", c, /*timeout_ms=*/300);
  Finish(loop, c);
  INFO(c.done->transport_error);
  CHECK_FALSE(c.done->ok());
  CHECK(c.done->transport_error.rfind("timed out after 300 ms", 0) == 0);
  CHECK_FALSE(c.head);
}

TEST_CASE("A refused connection is reported as a connect error", "[curl]") {
  // A bound socket that does not listen: connecting to it is refused, and no one else can
  // take the port while the test runs.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  socklen_t length = sizeof(address);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  loop::Loop loop;
  {
    auto config = FromMasterUrl("http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)));
    REQUIRE(config.ok());
    CurlTransport transport(loop, config.value(), TestOptions());
    Collected c;
    Get(transport, "/api", c);
    Finish(loop, c);
    INFO(c.done->transport_error);
    CHECK(c.done->transport_error.rfind("connect: ", 0) == 0);
    CHECK(c.done->transport_error.find("refused") != std::string::npos);
  }
  close(fd);
  RequireClosesClean(loop);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "Plain http:// from --kube-master-url works and reuses its connection", "[curl]") {
  auto config = FromMasterUrl("http://127.0.0.1:" + std::to_string(PlainServer().port()) + "/");
  REQUIRE(config.ok());
  CurlTransport transport(loop, config.value(), TestOptions());
  Collected first, second;
  Get(transport, "/headers", first);
  Finish(loop, first);
  Get(transport, "/headers", second);
  Finish(loop, second);
  REQUIRE(first.done->ok());
  CHECK(first.head->http_version == "1.1");
  CHECK_FALSE(PeerPort(first.body).empty());
  CHECK(PeerPort(first.body) == PeerPort(second.body));  // keep-alive
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "max_connections queues requests on the connections it allows", "[curl]") {
  CurlTransport::Options options = TestOptions();
  options.max_connections = 1;
  options.http2 = false;
  CurlTransport transport(loop, TlsConfig(), options);
  std::vector<Collected> all(4);
  for (auto& c : all) Get(transport, "/headers", c);
  for (auto& c : all) Finish(loop, c);
  for (auto& c : all) {
    CHECK(c.done->ok());
    CHECK_FALSE(PeerPort(c.body).empty());
    CHECK(PeerPort(c.body) == PeerPort(all[0].body));
  }
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "Many concurrent requests all complete", "[curl]") {
  CurlTransport transport(loop, TlsConfig(), TestOptions());
  std::vector<Collected> all(40);
  for (size_t i = 0; i < all.size(); ++i) {
    Get(transport, i % 2 == 0 ? "/json" : "/big?bytes=50000", all[i]);
  }
  REQUIRE(RunUntil(
      loop,
      [&] {
        for (auto& c : all) {
          if (!c.done) return false;
        }
        return true;
      },
      2 * kWaitMs));
  uint64_t bytes = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    INFO(i << ": " << all[i].done->transport_error);
    CHECK(all[i].done->ok());
    CHECK(all[i].dones == 1);
    bytes += all[i].body.size();
  }
  CHECK(transport.stats().bytes_received == bytes);
  CHECK(transport.stats().requests_started == all.size());
}

}  // namespace
}  // namespace kdns::k8s

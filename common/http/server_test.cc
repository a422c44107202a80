#include "common/http/server.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/http/server_thread.h"
#include "common/limits/limits.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/timer.h"

namespace kdns::http {
namespace {

using loop::testing::RawTcpClient;
using loop::testing::RunUntil;

Server::Options TestOptions() {
  Server::Options options;
  options.bind_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  return options;
}

// TestOptions with the connection caps: `max` in all, `per_source` from one source.
Server::Options CappedOptions(size_t max, size_t per_source) {
  Server::Options options = TestOptions();
  options.max_connections = max;
  options.max_connections_per_source = per_source;
  return options;
}

void AddRoutes(Server& server) {
  server.Handle("/metrics", [](const Request&) {
    Response r = Response::Text(200, "kdns_up 1\n");
    r.content_type = "text/plain; version=0.0.4";
    return r;
  });
  server.HandlePrefix("/healthcheck/", [](const Request& request) {
    return Response::Text(200, "label=" + request.path.substr(13) + " query=" + request.query);
  });
  server.Handle("/throws", [](const Request&) -> Response { throw std::runtime_error("x"); });
}

// Counts complete responses ("HTTP/1.1 " status lines) received so far.
size_t CountResponses(const std::string& received) {
  size_t count = 0;
  for (size_t at = received.find("HTTP/1.1 "); at != std::string::npos;
       at = received.find("HTTP/1.1 ", at + 1)) {
    ++count;
  }
  return count;
}

// A server on a fresh loop; its destructor checks that the loop closes with no handle left.
struct Fixture {
  explicit Fixture(Server::Options options = TestOptions())
      : server(std::make_unique<Server>(loop, options)) {
    AddRoutes(*server);
    std::string error;
    bool started = server->Start(&error);
    INFO(error);
    REQUIRE(started);
  }
  ~Fixture() {
    server.reset();
    bool closed = loop.Close();
    INFO("open handles: " << loop::testing::OpenHandles(loop));
    CHECK(closed);  // CHECK, not REQUIRE: never throw from a destructor
  }
  loop::SocketAddress address() const { return server->GetLocalAddress(); }

  // Sends `request` on a new connection and waits for the server to close it.
  std::string Exchange(const std::string& request) {
    RawTcpClient client(address());
    client.Send(request);
    REQUIRE(RunUntil(loop, [&] { return client.closed(); }));
    return client.received();
  }

  loop::Loop loop;
  std::unique_ptr<Server> server;
};

TEST_CASE("Server answers a known path with 200 and its body", "[http][server]") {
  Fixture f;
  auto reply = f.Exchange("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(reply.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(reply.find("Content-Type: text/plain; version=0.0.4\r\n") != std::string::npos);
  CHECK(reply.find("Content-Length: 10\r\n") != std::string::npos);
  CHECK(reply.substr(reply.size() - 10) == "kdns_up 1\n");
}

TEST_CASE("Server routes by exact path, then by prefix, else 404", "[http][server]") {
  Fixture f;
  auto prefix = f.Exchange("GET /healthcheck/kubedns?v=1 HTTP/1.0\r\n\r\n");
  CHECK(prefix.find("200 OK") != std::string::npos);
  CHECK(prefix.find("label=kubedns query=v=1") != std::string::npos);
  CHECK(f.Exchange("GET /nope HTTP/1.0\r\n\r\n").find("HTTP/1.1 404 Not Found") == 0);
  CHECK(f.Exchange("GET /metrics/extra HTTP/1.0\r\n\r\n").find("404") != std::string::npos);
  CHECK(f.Exchange("GET /throws HTTP/1.0\r\n\r\n").find("HTTP/1.1 500") == 0);
}

TEST_CASE("Server answers other methods with 405 and Allow", "[http][server]") {
  Fixture f;
  std::string method = GENERATE("POST", "PUT", "DELETE", "OPTIONS");
  auto reply = f.Exchange(method + " /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(reply.find("HTTP/1.1 405 Method Not Allowed\r\n") == 0);
  CHECK(reply.find("Allow: GET, HEAD\r\n") != std::string::npos);
}

TEST_CASE("Server answers HEAD with the headers only", "[http][server]") {
  Fixture f;
  auto reply = f.Exchange("HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(reply.find("HTTP/1.1 200 OK\r\n") == 0);
  CHECK(reply.find("Content-Length: 10\r\n") != std::string::npos);
  CHECK(reply.substr(reply.size() - 4) == "\r\n\r\n");
}

TEST_CASE("Server keeps a connection alive for a second request", "[http][server]") {
  Fixture f;
  RawTcpClient client(f.address());
  client.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(RunUntil(f.loop, [&] { return CountResponses(client.received()) == 1; }));
  CHECK(client.received().find("Connection: keep-alive") != std::string::npos);
  CHECK_FALSE(client.closed());
  client.Send("GET /healthcheck/two HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(
      RunUntil(f.loop, [&] { return client.received().find("label=two") != std::string::npos; }));
  CHECK(f.server->stats().requests == 2);
  CHECK(f.server->open_connections() == 1);
}

TEST_CASE("Server answers pipelined requests in order", "[http][server]") {
  Fixture f;
  RawTcpClient client(f.address());
  client.Send(
      "GET /healthcheck/a HTTP/1.1\r\nHost: x\r\n\r\nGET /healthcheck/b HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /healthcheck/c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  REQUIRE(RunUntil(f.loop, [&] { return client.closed(); }));
  const std::string& r = client.received();
  size_t a = r.find("label=a"), b = r.find("label=b"), c = r.find("label=c");
  REQUIRE(c != std::string::npos);
  CHECK(a < b);
  CHECK(b < c);
}

TEST_CASE("Server rejects malformed and oversized requests and closes", "[http][server]") {
  Server::Options options = TestOptions();
  options.max_request_bytes = 1024;
  Fixture f(options);
  CHECK(f.Exchange("BAD\r\n\r\n").find("HTTP/1.1 400 Bad Request") == 0);
  CHECK(f.Exchange("GET /x HTTP/1.1\r\nHost: x\r\nX: " + std::string(2000, 'a') + "\r\n\r\n")
            .find("HTTP/1.1 431") == 0);
  CHECK(f.Exchange("GET /" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n").find("HTTP/1.1 414") ==
        0);
  CHECK(f.Exchange("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            .find("HTTP/1.1 413") == 0);
  CHECK(f.Exchange("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            .find("HTTP/1.1 501") == 0);
  CHECK(f.server->stats().bad_requests == 5);
}

TEST_CASE("Server answers 408 and closes when a request stalls (slowloris)", "[http][server]") {
  Server::Options options = TestOptions();
  options.request_timeout_ms = 200;
  Fixture f(options);
  uint64_t hits = limits::LimitHits(limits::Limit::kHttpRequestTimeout);
  RawTcpClient client(f.address());
  client.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n");
  // Trickling more bytes does not extend the deadline: it runs from the first byte.
  loop::Timer trickle(f.loop);
  trickle.StartRepeating(50, [&] { client.Send("X-Slow: 1\r\n"); });
  REQUIRE(RunUntil(
      f.loop, [&] { return client.closed(); }, 3000));
  trickle.Stop();
  CHECK(client.received().find("HTTP/1.1 408 Request Timeout") == 0);
  CHECK(f.server->stats().timeouts == 1);
  CHECK(limits::LimitHits(limits::Limit::kHttpRequestTimeout) == hits + 1);
}

TEST_CASE("Server closes a connection that stays idle", "[http][server]") {
  Server::Options options = TestOptions();
  options.idle_timeout_ms = 100;
  Fixture f(options);
  RawTcpClient client(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return client.closed(); }));
  CHECK(client.received().empty());
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 0; }));
}

TEST_CASE("A keep-alive connection gets the idle timeout after a response", "[http][server]") {
  Server::Options options = TestOptions();
  options.request_timeout_ms = 50;
  options.idle_timeout_ms = 60'000;
  Fixture f(options);
  RawTcpClient client(f.address());
  client.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(RunUntil(f.loop, [&] { return CountResponses(client.received()) == 1; }));
  // Well past the request timeout: an idle keep-alive connection stays open.
  bool waited = false;
  loop::Timer wait(f.loop);
  wait.Start(200, [&] { waited = true; });
  REQUIRE(RunUntil(f.loop, [&] { return waited; }));
  CHECK_FALSE(client.closed());
  CHECK(f.server->stats().timeouts == 0);
}

const loop::SocketAddress kOtherSource = *loop::SocketAddress::Parse("127.0.0.2:0");

// A request sent and answered on `client`, which stays open.
void RequireServed(Fixture& f, RawTcpClient& client) {
  size_t before = CountResponses(client.received());
  client.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(RunUntil(f.loop, [&] { return CountResponses(client.received()) == before + 1; }));
  CHECK(client.received().find("HTTP/1.1 200") != std::string::npos);
}

TEST_CASE("At the cap a newcomer closes the connection idle longest", "[http][server]") {
  Server::Options options = TestOptions();
  options.max_connections = 3;
  Fixture f(options);
  RawTcpClient a(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 1; }));
  RawTcpClient b(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 2; }));
  RawTcpClient c(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 3; }));
  // a was accepted first but has just been used: b is now idle longest.
  RequireServed(f, a);
  uint64_t hits = limits::LimitHits(limits::Limit::kHttpConnections);
  RawTcpClient newcomer(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return b.closed(); }));
  CHECK(b.received().empty());
  RequireServed(f, newcomer);
  CHECK_FALSE(a.closed());
  CHECK_FALSE(c.closed());
  CHECK(f.server->open_connections() == 3);
  CHECK(f.server->stats().idle_closed_at_cap == 1);
  CHECK(f.server->stats().refused == 0);
  CHECK(limits::LimitHits(limits::Limit::kHttpConnections) == hits + 1);
}

TEST_CASE("The per-source cap closes that source's oldest idle connection, not another's",
          "[http][server]") {
  Fixture f(CappedOptions(/*max=*/10, /*per_source=*/2));
  RawTcpClient victim(f.address());  // from 127.0.0.1, idle longest of all
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 1; }));
  RawTcpClient first(f.address(), &kOtherSource);
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 2; }));
  RawTcpClient second(f.address(), &kOtherSource);
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 3; }));
  uint64_t per_source = limits::LimitHits(limits::Limit::kHttpConnectionsPerSource);
  uint64_t global = limits::LimitHits(limits::Limit::kHttpConnections);
  RawTcpClient third(f.address(), &kOtherSource);
  REQUIRE(RunUntil(f.loop, [&] { return first.closed(); }));
  RequireServed(f, third);
  CHECK_FALSE(second.closed());
  RequireServed(f, victim);
  CHECK(limits::LimitHits(limits::Limit::kHttpConnectionsPerSource) == per_source + 1);
  CHECK(limits::LimitHits(limits::Limit::kHttpConnections) == global);
}

TEST_CASE("A request under way is never closed for a newcomer from the same source",
          "[http][server]") {
  Server::Options options = TestOptions();
  options.max_connections = 3;
  options.max_response_bytes = 16 << 20;
  Fixture f(options);
  f.server->Handle("/big",
                   [](const Request&) { return Response::Text(200, std::string(8 << 20, 'b')); });
  RawTcpClient a(f.address()), b(f.address()), writing(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 3; }));
  // Two requests being read, one response being written to a client that reads slowly.
  a.Send("GET /metrics HTTP/1.1\r\n");
  b.Send("GET /metr");
  writing.ShrinkReceiveBuffer();
  writing.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(RunUntil(f.loop, [&] { return f.server->idle_connections() == 0; }));
  uint64_t hits = limits::LimitHits(limits::Limit::kHttpConnections);
  // Nothing idle to close: the newcomer is closed at accept, as before the caps had a choice.
  RawTcpClient refused(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return refused.closed(); }));
  CHECK(refused.received().empty());
  CHECK(f.server->stats().refused == 1);
  CHECK(f.server->open_connections() == 3);
  CHECK(limits::LimitHits(limits::Limit::kHttpConnections) == hits + 1);
  // The response is still being written, and both requests complete.
  CHECK(f.server->stats().timeouts == 0);
  CHECK(CountResponses(writing.received()) == 1);
  CHECK_FALSE(writing.closed());
  a.Send("Host: x\r\n\r\n");
  b.Send("ics HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(RunUntil(f.loop, [&] {
    return CountResponses(a.received()) == 1 && CountResponses(b.received()) == 1;
  }));
  CHECK(f.server->stats().idle_closed_at_cap == 0);
}

// `count` connections from `source`, each with a request started and never finished, on a
// server that held nothing before; returns once the server holds them all, none idle.
std::vector<std::unique_ptr<RawTcpClient>> OpenSlowRequests(Fixture& f,
                                                            const loop::SocketAddress& source,
                                                            int count) {
  std::vector<std::unique_ptr<RawTcpClient>> clients;
  for (int i = 0; i < count; ++i) {
    clients.push_back(std::make_unique<RawTcpClient>(f.address(), &source));
    clients.back()->Send("GET /metrics HTTP/1.1\r\n");
    REQUIRE(RunUntil(f.loop, [&] {
      return f.server->open_connections() == static_cast<size_t>(i + 1) &&
             f.server->idle_connections() == 0;
    }));
  }
  return clients;
}

TEST_CASE(
    "At the cap with none idle, a light source closes the heaviest one's oldest slow "
    "request",
    "[http][server]") {
  const loop::SocketAddress third_source = *loop::SocketAddress::Parse("127.0.0.3:0");
  Server::Options options = CappedOptions(/*max=*/4, /*per_source=*/3);
  options.request_timeout_ms = 60'000;  // the slow requests stay for the whole test
  Fixture f(options);
  // 127.0.0.2: three slow requests
  std::vector<std::unique_ptr<RawTcpClient>> heavy = OpenSlowRequests(f, kOtherSource, 3);
  RawTcpClient light(f.address(), &third_source);  // 127.0.0.3: one slow request
  light.Send("GET /metr");
  REQUIRE(RunUntil(f.loop, [&] {
    return f.server->open_connections() == 4 && f.server->idle_connections() == 0;
  }));
  // The probe's source holds nothing: the heaviest source's oldest slow request makes room.
  RawTcpClient probe(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return heavy[0]->closed(); }));
  RequireServed(f, probe);
  CHECK(f.server->stats().slow_closed_at_cap == 1);
  CHECK_FALSE(heavy[1]->closed());
  CHECK_FALSE(light.closed());
  // The probe starts another request: nothing is idle again. 127.0.0.3 holds one and the
  // heaviest now two: sources at their share keep their slots.
  probe.Send("GET /met");
  REQUIRE(RunUntil(f.loop, [&] { return f.server->idle_connections() == 0; }));
  RawTcpClient second(f.address(), &third_source);
  REQUIRE(RunUntil(f.loop, [&] { return second.closed(); }));
  CHECK(f.server->stats().refused == 1);
  CHECK(f.server->stats().slow_closed_at_cap == 1);
  CHECK_FALSE(light.closed());
  CHECK_FALSE(heavy[2]->closed());
}

TEST_CASE("At the cap an idle connection of a light source is not closed for a newcomer",
          "[http][server]") {
  const loop::SocketAddress third_source = *loop::SocketAddress::Parse("127.0.0.3:0");
  Server::Options options = CappedOptions(/*max=*/4, /*per_source=*/3);
  options.request_timeout_ms = 60'000;
  Fixture f(options);
  // 127.0.0.2: three slow requests
  std::vector<std::unique_ptr<RawTcpClient>> heavy = OpenSlowRequests(f, kOtherSource, 3);
  // A probe's connection, accepted and not read from yet: idle, and the only one that is.
  RawTcpClient probe(f.address());
  REQUIRE(RunUntil(f.loop, [&] { return f.server->idle_connections() == 1; }));
  RawTcpClient newcomer(f.address(), &third_source);
  REQUIRE(RunUntil(f.loop, [&] { return heavy[0]->closed(); }));
  CHECK(f.server->stats().slow_closed_at_cap == 1);
  CHECK(f.server->stats().idle_closed_at_cap == 0);
  RequireServed(f, probe);
  RequireServed(f, newcomer);
}

TEST_CASE("One source's idle and slow connections leave room for another source",
          "[http][server]") {
  Fixture f(CappedOptions(/*max=*/16, /*per_source=*/4));
  // 40 connections from 127.0.0.2: every other one starts a request and stalls.
  std::vector<std::unique_ptr<RawTcpClient>> attack;
  for (int i = 0; i < 40; ++i) {
    attack.push_back(std::make_unique<RawTcpClient>(f.address(), &kOtherSource));
    if (i % 2 == 1) attack.back()->Send("GET /metrics HTTP/1.1\r\nX-Slow: ");
    REQUIRE(RunUntil(f.loop, [&] {
      return f.server->stats().accepted + f.server->stats().refused == static_cast<uint64_t>(i + 1);
    }));
  }
  CHECK(f.server->open_connections() <= 4);
  RawTcpClient victim(f.address());
  RequireServed(f, victim);
  CHECK(limits::LimitHits(limits::Limit::kHttpConnectionsPerSource) > 0);
}

TEST_CASE("Server closes a client that does not read its response", "[http][server]") {
  Server::Options options = TestOptions();
  options.request_timeout_ms = 200;
  options.max_response_bytes = 16 << 20;  // room for /big: the drain deadline closes it
  Fixture f(options);
  f.server->Handle("/big",
                   [](const Request&) { return Response::Text(200, std::string(8 << 20, 'b')); });
  RawTcpClient client(f.address());
  client.ShrinkReceiveBuffer();
  client.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(RunUntil(
      f.loop, [&] { return f.server->stats().timeouts == 1; }, 3000));
  REQUIRE(RunUntil(f.loop, [&] { return f.server->open_connections() == 0; }));
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "Server shuts down with connections open and leaves no handle", "[http][server]") {
  Server server(loop, TestOptions());
  AddRoutes(server);
  std::string error;
  REQUIRE(server.Start(&error));
  RawTcpClient a(server.GetLocalAddress()), b(server.GetLocalAddress());
  a.Send("GET /met");
  REQUIRE(RunUntil(loop, [&] { return server.open_connections() == 2; }));
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "Starting on a port in use fails with a clear error",
                 "[http][server]") {
  Server first(loop, TestOptions());
  std::string error;
  REQUIRE(first.Start(&error));
  Server::Options options = TestOptions();
  options.bind_address = first.GetLocalAddress();
  Server second(loop, options);
  CHECK_FALSE(second.Start(&error));
  CHECK_THAT(error, Catch::Contains("in use"));
}

// Runs curl; returns "<body><http_code>".
std::string Curl(const std::string& args) {
  std::string command = "curl -s -m 5 -o - -w '%{http_code}' " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

TEST_CASE("ServerThread serves curl from its own thread and stops cleanly", "[http][server]") {
  ServerThread thread(TestOptions());
  thread.Handle("/metrics", [](const Request&) { return Response::Text(200, "kdns_up 1\n"); });
  thread.HandlePrefix("/healthcheck/", [](const Request& r) {
    return Response::Text(r.path == "/healthcheck/ok" ? 200 : 503, "checked\n");
  });
  std::string error;
  REQUIRE(thread.Start(&error));
  std::string base = "http://" + thread.local_address().ToString();
  CHECK(Curl(base + "/metrics") == "kdns_up 1\n200");
  CHECK(Curl(base + "/healthcheck/ok") == "checked\n200");
  CHECK(Curl(base + "/healthcheck/bad") == "checked\n503");
  CHECK(Curl(base + "/missing") == "Not Found\n404");
  CHECK(Curl("-X POST " + base + "/metrics") == "Method Not Allowed\n405");
  CHECK(Curl("-I " + base + "/metrics").find("Content-Length: 10") != std::string::npos);
  thread.Stop();
  thread.Stop();  // idempotent
}

TEST_CASE("ServerThread reports a bind failure from Start", "[http][server]") {
  ServerThread first(TestOptions());
  std::string error;
  REQUIRE(first.Start(&error));
  Server::Options options = TestOptions();
  options.bind_address = first.local_address();
  ServerThread second(options);
  CHECK_FALSE(second.Start(&error));
  CHECK_THAT(error, Catch::Contains("in use"));
}

}  // namespace
}  // namespace kdns::http

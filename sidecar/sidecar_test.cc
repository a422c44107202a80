#include "sidecar/sidecar.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/limits/limits.h"
#include "common/loop/loop_test_util.h"
#include "sidecar/testing.h"

namespace kdns::sidecar::testing {
namespace {

std::string ProbeFlag(const std::string& label, const loop::SocketAddress& server,
                      const std::string& name) {
  return label + "," + server.ToString() + "," + name + ",1,A";
}

// A sidecar on 127.0.0.1:<free port> probing `ok` (answers), `nxdomain` (NXDOMAIN) and
// `notpresent` (a closed port), polling statistics from the same fake server.
struct Fixture {
  explicit Fixture(loop::Loop& loop_in, uint64_t first_delay_ms = 0)
      : loop(loop_in),
        ok(loop, AnswerA),
        nxdomain(loop, AnswerNxDomain),
        stats(loop, ChaosStats(&values)) {
    FlagValues flags;
    flags.dnsmasq_addr = "127.0.0.1";
    flags.dnsmasq_port = stats.address().port();
    flags.dnsmasq_poll_interval_ms = 100;
    flags.prometheus_addr = "127.0.0.1";
    flags.prometheus_port = 0;
    const std::vector<std::string> probes = {
        ProbeFlag("ok", ok.address(), "www.example.test"),
        ProbeFlag("nxdomain", nxdomain.address(), "nope.example.test"),
        ProbeFlag("notpresent", ClosedPort(loop), "www.example.test")};
    Options options;
    std::string error;
    REQUIRE(BuildOptions(flags, probes, &options, &error));
    SidecarTuning tuning;
    tuning.first_delay = [first_delay_ms](uint64_t) { return first_delay_ms; };
    tuning.probe_timeout_ms = 200;
    sidecar = std::make_unique<Sidecar>(loop, options, tuning);
    REQUIRE(sidecar->Start(&error));
  }
  std::string Get(const std::string& request) {
    RawTcpClient client(sidecar->http_address());
    client.Send(request);
    REQUIRE(RunUntil(loop, [&] { return client.closed(); }));
    return client.received();
  }
  std::string Get(const std::string& method, const std::string& path) {
    return Get(method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  }
  static std::string Body(const std::string& reply) {
    return reply.substr(reply.find("\r\n\r\n") + 4);
  }

  loop::Loop& loop;
  DnsmasqValues values = {200, 20, 0, 20, 1000};
  FakeDnsServer ok;
  FakeDnsServer nxdomain;
  FakeDnsServer stats;
  std::unique_ptr<Sidecar> sidecar;
};

bool AllProbed(const Sidecar& sidecar) {
  for (const auto& probe : sidecar.probes()) {
    if (probe->probes_done() == 0) return false;
  }
  return sidecar.poller().rounds_done() > 0;
}

TEST_CASE_METHOD(LoopFixture, "Health checks answer per label with kube-dns's JSON", "[sidecar]") {
  Fixture f(loop);
  REQUIRE(RunUntil(f.loop, [&] { return AllProbed(*f.sidecar); }));

  const std::string ok = f.Get("GET", "/healthcheck/ok");
  CHECK_THAT(ok, Catch::StartsWith("HTTP/1.1 200 OK\r\n"));
  CHECK_THAT(ok, Catch::Contains("Content-Type: application/json\r\n"));
  CHECK_THAT(Fixture::Body(ok),
             Catch::Matches(R"(\{"IsOk":true,"LatencySeconds":[0-9.e-]+,"Err":""\})"));

  const std::string nx = f.Get("GET", "/healthcheck/nxdomain");
  CHECK_THAT(nx, Catch::StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  CHECK(Fixture::Body(nx) ==
        R"({"IsOk":false,"LatencySeconds":0,"Err":"no RRs for domain \"nope.example.test.\""})");

  const std::string gone = f.Get("GET", "/healthcheck/notpresent");
  CHECK_THAT(gone, Catch::StartsWith("HTTP/1.1 503 "));
  CHECK_THAT(
      Fixture::Body(gone),
      Catch::Matches(
          R"(\{"IsOk":false,"LatencySeconds":0,"Err":"query A \\"www\.example\.test\.\\" to 127\.0\.0\.1:[0-9]+: connection refused"\})"));
}

TEST_CASE_METHOD(LoopFixture, "Before the first probe every health check says it is waiting",
                 "[sidecar]") {
  Fixture f(loop, /*first_delay_ms=*/60'000);
  for (const char* label : {"ok", "nxdomain", "notpresent"}) {
    const std::string reply = f.Get("GET", std::string("/healthcheck/") + label);
    CHECK_THAT(reply, Catch::StartsWith("HTTP/1.1 503 "));
    CHECK(Fixture::Body(reply) ==
          R"({"IsOk":false,"LatencySeconds":0,"Err":"waiting for first probe"})");
  }
}

TEST_CASE_METHOD(LoopFixture, "healthz, metrics, 404 and 405", "[sidecar]") {
  Fixture f(loop);
  REQUIRE(RunUntil(f.loop, [&] { return AllProbed(*f.sidecar); }));

  const std::string healthz = f.Get("GET", "/healthz");
  CHECK_THAT(healthz, Catch::StartsWith("HTTP/1.1 200 OK\r\n"));
  CHECK_THAT(Fixture::Body(healthz),
             Catch::Matches(R"(ok \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC\)\n)"));

  const std::string metrics = f.Get("GET", "/metrics");
  CHECK_THAT(metrics, Catch::StartsWith("HTTP/1.1 200 OK\r\n"));
  CHECK_THAT(metrics,
             Catch::Contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  for (const char* name :
       {"kubedns_dnsmasq_hits 200\n", "kubedns_dnsmasq_max_size 1000\n",
        "kubedns_probe_ok_latency_ms_bucket{le=\"8192\"}", "kubedns_probe_ok_errors 0\n",
        "kubedns_probe_nxdomain_errors ", "kubedns_probe_notpresent_errors ",
        "kdns_sidecar_probe_rcode_total{probe=\"nxdomain\",rcode=\"NXDOMAIN\"}"}) {
    CHECK_THAT(metrics, Catch::Contains(name));
  }

  const std::string head = f.Get("HEAD", "/healthcheck/ok");
  CHECK_THAT(head, Catch::StartsWith("HTTP/1.1 200 OK\r\n"));
  CHECK(Fixture::Body(head).empty());

  CHECK_THAT(f.Get("GET", "/healthcheck/unknown"), Catch::StartsWith("HTTP/1.1 404 "));
  CHECK_THAT(f.Get("GET", "/healthcheck/"), Catch::StartsWith("HTTP/1.1 404 "));
  CHECK_THAT(f.Get("GET", "/healthcheck/ok/more"), Catch::StartsWith("HTTP/1.1 404 "));
  CHECK_THAT(f.Get("GET", "/"), Catch::StartsWith("HTTP/1.1 404 "));
  // No debug data on this port; the ask is counted (common/server/debug_http.h).
  const uint64_t debug_asks = limits::LimitHits(limits::Limit::kDebugOnPublishedPort);
  CHECK_THAT(f.Get("GET", "/debug/top-clients"), Catch::StartsWith("HTTP/1.1 404 "));
  CHECK(limits::LimitHits(limits::Limit::kDebugOnPublishedPort) == debug_asks + 1);
  const std::string post = f.Get("POST", "/healthcheck/ok");
  CHECK_THAT(post, Catch::StartsWith("HTTP/1.1 405 "));
  CHECK_THAT(post, Catch::Contains("Allow: GET, HEAD\r\n"));
  CHECK_THAT(f.Get("DELETE", "/metrics"), Catch::StartsWith("HTTP/1.1 405 "));
  // Bounded requests: a head over 8 KiB is refused.
  const std::string big = f.Get(
      "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(16 * 1024, 'a') + "\r\n\r\n");
  CHECK_THAT(big, Catch::StartsWith("HTTP/1.1 431 "));
}

TEST_CASE_METHOD(LoopFixture, "A port in use is a start-up error", "[sidecar]") {
  http::Server::Options http_options;
  http_options.bind_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  http::Server taken(loop, http_options);
  std::string error;
  REQUIRE(taken.Start(&error));
  FlagValues flags;
  flags.prometheus_addr = "127.0.0.1";
  flags.prometheus_port = taken.GetLocalAddress().port();
  Options options;
  REQUIRE(BuildOptions(flags, {}, &options, &error));
  Sidecar sidecar(loop, options);
  CHECK_FALSE(sidecar.Start(&error));
  CHECK_THAT(error, Catch::StartsWith("HTTP on 127.0.0.1:"));
}

}  // namespace
}  // namespace kdns::sidecar::testing

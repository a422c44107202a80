#include "sidecar/dns_probe.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/dns/testing.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/histogram.h"
#include "common/metrics/text_parser.h"
#include "sidecar/testing.h"

namespace kdns::sidecar::testing {
namespace {

using dns::testing::N;

ProbeOption Option(std::string label, const loop::SocketAddress& server, const std::string& name,
                   uint64_t interval_ms = 50, dns::RrType type = dns::RrType::kAny) {
  ProbeOption option;
  option.label = std::move(label);
  option.server = server;
  option.name_text = name;
  option.name = N(name);
  option.interval_ms = interval_ms;
  option.type = type;
  return option;
}

DnsProbe::Options ProbeOptions(ProbeOption option) {
  DnsProbe::Options options;
  options.probe = std::move(option);
  options.timeout_ms = 200;
  options.first_delay = [](uint64_t) { return 0; };
  return options;
}

double Sample(const metrics::Registry& registry, const std::string& series) {
  const std::optional<metrics::ParsedText> parsed = metrics::ParseText(registry.Render());
  REQUIRE(parsed);
  auto it = parsed->samples.find(series);
  return it == parsed->samples.end() ? -1 : it->second;
}

// One DnsProbe on the test's loop, its metric families on a registry of its own.
struct ProbeRig {
  ProbeRig(loop::Loop& loop, DnsProbe::Options options)
      : families(registry), probe(loop, std::move(options), registry, families) {}
  // Starts the probe; fails the test when it cannot.
  void Start() {
    std::string error;
    const bool started = probe.Start(&error);
    INFO(error);
    REQUIRE(started);
  }

  metrics::Registry registry;
  ProbeFamilies families;
  DnsProbe probe;
};

TEST_CASE("The probe query asks for the name and type with RD set", "[sidecar][probe]") {
  ProbeOption option = Option("x", loop::SocketAddress(), "kubernetes.default.svc.cluster.local.",
                              5000, dns::RrType::kSrv);
  dns::Message query;
  REQUIRE(dns::ParseMessage(BuildProbeQuery(option), &query) == dns::ParseError::kOk);
  CHECK_FALSE(query.header.qr);
  CHECK(query.header.rd);
  CHECK_FALSE(query.edns);
  REQUIRE(query.questions.size() == 1);
  CHECK(query.questions[0] == dns::Question{N("kubernetes.default.svc.cluster.local."),
                                            dns::RrType::kSrv, dns::RrClass::kIn});
}

TEST_CASE("A probe passes on any reply with records and fails on an empty answer",
          "[sidecar][probe]") {
  const ProbeOption option = Option("x", loop::SocketAddress(), "nope.example.test.");
  dns::Message query;
  query.questions.push_back({option.name, dns::RrType::kAny, dns::RrClass::kIn});

  dns::Message answer = ReplyTo(query);
  answer.answers.push_back({option.name, dns::RrType::kA, dns::RrClass::kIn, 30, A("192.0.2.1")});
  ProbeOutcome outcome = EvaluateProbeReply(option, ARES_SUCCESS, Encode(answer));
  CHECK(outcome.failure == ProbeFailure::kNone);
  CHECK(outcome.rcode == dns::Rcode::kNoError);
  CHECK(outcome.error.empty());

  // The rcode alone does not decide: SERVFAIL with a record passes...
  answer.header.rcode = dns::Rcode::kServFail;
  outcome = EvaluateProbeReply(option, ARES_SUCCESS, Encode(answer));
  CHECK(outcome.failure == ProbeFailure::kNone);
  CHECK(outcome.rcode == dns::Rcode::kServFail);

  // ...and NXDOMAIN or NOERROR without one fails, with kube-dns's text.
  for (dns::Rcode rcode : {dns::Rcode::kNxDomain, dns::Rcode::kNoError}) {
    outcome = EvaluateProbeReply(option, ARES_SUCCESS, Encode(ReplyTo(query, rcode)));
    CHECK(outcome.failure == ProbeFailure::kNoAnswer);
    CHECK(outcome.rcode == rcode);
    CHECK(outcome.error == "no RRs for domain \"nope.example.test.\"");
  }
}

TEST_CASE("A probe fails on a transport error or a malformed reply", "[sidecar][probe]") {
  const ProbeOption option =
      Option("x", *loop::SocketAddress::Parse("127.0.0.1:5999"), "a.example.test.");
  ProbeOutcome outcome = EvaluateProbeReply(option, ARES_ECONNREFUSED, {});
  CHECK(outcome.failure == ProbeFailure::kRefused);
  CHECK(outcome.error == "query ANY \"a.example.test.\" to 127.0.0.1:5999: connection refused");
  CHECK_FALSE(outcome.rcode);
  CHECK(EvaluateProbeReply(option, ARES_ETIMEOUT, {}).failure == ProbeFailure::kTimeout);
  CHECK(EvaluateProbeReply(option, ARES_EBADRESP, {}).failure == ProbeFailure::kMalformed);
  CHECK(EvaluateProbeReply(option, ARES_ESERVFAIL, {}).failure == ProbeFailure::kNetwork);
  const std::vector<uint8_t> garbage = {0, 1, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 9, 'x'};
  outcome = EvaluateProbeReply(option, ARES_SUCCESS, garbage);
  CHECK(outcome.failure == ProbeFailure::kMalformed);
  CHECK_THAT(outcome.error, Catch::StartsWith("query ANY \"a.example.test.\" to "
                                              "127.0.0.1:5999: malformed reply: "));
}

TEST_CASE("The next probe waits the interval minus the last latency", "[sidecar][probe]") {
  CHECK(NextProbeDelayMs(5000, 0) == 5000);
  CHECK(NextProbeDelayMs(5000, 1'200'000) == 4999);  // 1.2 ms: whole ms taken off
  CHECK(NextProbeDelayMs(5000, 2'000'000'000) == 3000);
  CHECK(NextProbeDelayMs(1000, 1'000'000'000) == 0);
  CHECK(NextProbeDelayMs(1000, 2'500'000'000) == 0);
}

TEST_CASE("The first probe waits a random delay within the interval", "[sidecar][probe]") {
  CHECK(DnsProbe::RandomFirstDelay(0) == 0);
  CHECK(DnsProbe::RandomFirstDelay(1) == 0);
  bool varied = false;
  const uint64_t first = DnsProbe::RandomFirstDelay(5000);
  for (int i = 0; i < 200; ++i) {
    const uint64_t delay = DnsProbe::RandomFirstDelay(5000);
    CHECK(delay < 5000);
    varied = varied || delay != first;
  }
  CHECK(varied);
}

TEST_CASE("Latency buckets are 0.25 ms doubling through 8192 ms, edges inclusive",
          "[sidecar][probe]") {
  const std::vector<double> bounds = ProbeLatencyBucketsMs();
  REQUIRE(bounds.size() == 16);
  CHECK(bounds.front() == 0.25);
  CHECK(bounds.back() == 8192);
  for (size_t i = 1; i < bounds.size(); ++i) CHECK(bounds[i] == bounds[i - 1] * 2);

  metrics::Histogram histogram(bounds);
  histogram.Observe(0.25);       // on the first edge: le="0.25"
  histogram.Observe(0.2500001);  // just above: le="0.5"
  histogram.Observe(1);          // on an edge: le="1"
  histogram.Observe(8192);       // the last edge: le="8192"
  histogram.Observe(8192.001);   // above every bound: +Inf only
  const metrics::Histogram::Snapshot snapshot = histogram.Collect();
  CHECK(snapshot.cumulative_counts[0] == 1);   // le=0.25
  CHECK(snapshot.cumulative_counts[1] == 2);   // le=0.5
  CHECK(snapshot.cumulative_counts[2] == 3);   // le=1
  CHECK(snapshot.cumulative_counts[14] == 3);  // le=4096
  CHECK(snapshot.cumulative_counts[15] == 4);  // le=8192
  CHECK(snapshot.cumulative_counts[16] == 5);  // +Inf
}

TEST_CASE_METHOD(LoopFixture, "A probe registers kube-dns's metric names, help texts and buckets",
                 "[sidecar][probe]") {
  ProbeRig rig(loop, ProbeOptions(Option("dnsmasq", loop::SocketAddress(), "a.")));
  const std::string text = rig.registry.Render();
  CHECK_THAT(text, Catch::Contains("# HELP kubedns_probe_dnsmasq_latency_ms Latency of the DNS "
                                   "probe request dnsmasq\n# TYPE kubedns_probe_dnsmasq_latency_ms "
                                   "histogram\n"));
  CHECK_THAT(text, Catch::Contains("# HELP kubedns_probe_dnsmasq_errors Count of errors in name "
                                   "resolution of dnsmasq\n# TYPE kubedns_probe_dnsmasq_errors "
                                   "counter\nkubedns_probe_dnsmasq_errors 0\n"));
  for (const char* le : {"0.25", "0.5", "1", "2", "4", "8", "16", "32", "64", "128", "256", "512",
                         "1024", "2048", "4096", "8192", "+Inf"}) {
    CAPTURE(le);
    CHECK_THAT(text, Catch::Contains("kubedns_probe_dnsmasq_latency_ms_bucket{le=\"" +
                                     std::string(le) + "\"} 0\n"));
  }
  CHECK(rig.probe.status().error == kWaitingForFirstProbe);
}

TEST_CASE_METHOD(LoopFixture, "A probe of a name that answers passes and records its latency",
                 "[sidecar][probe]") {
  FakeDnsServer server(loop, AnswerA);
  ProbeRig rig(loop, ProbeOptions(Option("ok", server.address(), "www.example.test.")));
  rig.Start();
  CHECK(rig.probe.status().error == kWaitingForFirstProbe);
  REQUIRE(RunUntil(loop, [&] { return rig.probe.probes_done() >= 3; }));
  CHECK(rig.probe.status().ok);
  CHECK(rig.probe.status().error.empty());
  CHECK(rig.probe.status().latency_ns > 0);
  CHECK(HealthResponse(rig.probe.status()).status == 200);
  CHECK(server.queries().size() >= 3);
  CHECK(server.queries()[0].message.questions[0].type == dns::RrType::kAny);
  CHECK(Sample(rig.registry, "kubedns_probe_ok_latency_ms_count") >= 3);
  CHECK(Sample(rig.registry, "kubedns_probe_ok_errors") == 0);
  CHECK(Sample(rig.registry, "kdns_sidecar_probe_rcode_total{probe=\"ok\",rcode=\"NOERROR\"}") >=
        3);
  CHECK(Sample(rig.registry, "kdns_sidecar_probe_last_success_timestamp_seconds{probe=\"ok\"}") >
        1.6e9);
}

TEST_CASE_METHOD(LoopFixture, "A probe of a name that does not exist fails with no RRs",
                 "[sidecar][probe]") {
  FakeDnsServer server(loop, AnswerNxDomain);
  ProbeRig rig(loop, ProbeOptions(Option("nx", server.address(), "nope.example.test.")));
  rig.Start();
  REQUIRE(RunUntil(loop, [&] { return rig.probe.probes_done() >= 2; }));
  CHECK_FALSE(rig.probe.status().ok);
  CHECK(HealthJson(rig.probe.status()) ==
        R"({"IsOk":false,"LatencySeconds":0,"Err":"no RRs for domain \"nope.example.test.\""})");
  CHECK(Sample(rig.registry, "kubedns_probe_nx_errors") >= 2);
  CHECK(Sample(rig.registry, "kubedns_probe_nx_latency_ms_count") == 0);
  CHECK(Sample(rig.registry, "kdns_sidecar_probe_rcode_total{probe=\"nx\",rcode=\"NXDOMAIN\"}") >=
        2);
  CHECK(Sample(rig.registry,
               "kdns_sidecar_probe_failures_total{probe=\"nx\",reason=\"no_answer\"}") >= 2);
}

TEST_CASE_METHOD(LoopFixture,
                 "A probe of a server that is not there fails, and recovers when it answers",
                 "[sidecar][probe]") {
  FakeDnsServer server(loop, kdns::testing::Silent());
  DnsProbe::Options options = ProbeOptions(Option("flaky", server.address(), "a.example.test."));
  options.timeout_ms = 50;
  ProbeRig rig(loop, std::move(options));
  rig.Start();
  REQUIRE(RunUntil(loop, [&] { return rig.probe.probes_done() >= 1; }));
  CHECK_FALSE(rig.probe.status().ok);
  CHECK_THAT(rig.probe.status().error, Catch::EndsWith(": timeout"));
  CHECK(Sample(rig.registry,
               "kdns_sidecar_probe_failures_total{probe=\"flaky\",reason=\"timeout\"}") >= 1);

  server.set_script(AnswerA);
  REQUIRE(RunUntil(loop, [&] { return rig.probe.status().ok; }));
  CHECK(HealthResponse(rig.probe.status()).status == 200);

  server.set_script(AnswerNxDomain);
  REQUIRE(RunUntil(loop, [&] { return !rig.probe.status().ok; }));
  CHECK(rig.probe.status().latency_ns == 0);
}

TEST_CASE_METHOD(LoopFixture, "A probe to a closed port fails as refused", "[sidecar][probe]") {
  ProbeRig rig(loop, ProbeOptions(Option("gone", ClosedPort(loop), "a.")));
  rig.Start();
  REQUIRE(RunUntil(loop, [&] { return rig.probe.probes_done() >= 2; }));
  CHECK_THAT(rig.probe.status().error, Catch::EndsWith(": connection refused"));
  CHECK(Sample(rig.registry, "kubedns_probe_gone_errors") >= 2);
  CHECK(Sample(rig.registry,
               "kdns_sidecar_probe_failures_total{probe=\"gone\",reason=\"refused\"}") >= 2);
}

TEST_CASE_METHOD(LoopFixture, "Probes go out one interval apart, not interval plus latency",
                 "[sidecar][probe]") {
  FakeDnsServer server(loop, kdns::testing::Delayed(60, AnswerA));
  ProbeRig rig(loop, ProbeOptions(Option("paced", server.address(), "a.", 100)));
  rig.Start();
  const auto started = std::chrono::steady_clock::now();
  REQUIRE(RunUntil(loop, [&] { return rig.probe.probes_done() >= 5; }));
  const auto elapsed = std::chrono::steady_clock::now() - started;
  // Each probe took about 60 ms, so the wait after it was about 40 ms (41: the fake's
  // timer counts from libuv's cached loop time, up to a millisecond before the query
  // arrived): the five start at 0, 100, ..., 400 ms and the fifth ends near 460 ms,
  // where interval-plus-latency pacing would take 800 ms.
  CHECK(rig.probe.next_delay_ms() <= 41);
  CHECK(elapsed >= std::chrono::milliseconds(440));
  CHECK(server.queries().size() == 5);
}

}  // namespace
}  // namespace kdns::sidecar::testing

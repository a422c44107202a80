#include "sidecar/dnsmasq_poller.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "common/loop/loop_test_util.h"
#include "common/metrics/text_parser.h"
#include "sidecar/testing.h"

namespace kdns::sidecar::testing {
namespace {

// `timeout_ms` is long for a cache that answers (a round that times out on a slow machine,
// e.g. under TSan, would be counted as an error) and short for one that never does.
DnsmasqPoller::Options PollerOptions(const loop::SocketAddress& server,
                                     uint64_t timeout_ms = 2000) {
  DnsmasqPoller::Options options;
  options.server = server;
  options.poll_interval_ms = 20;
  options.timeout_ms = timeout_ms;
  return options;
}

std::map<std::string, double> Samples(const metrics::Registry& registry) {
  const std::optional<metrics::ParsedText> parsed = metrics::ParseText(registry.Render());
  REQUIRE(parsed);
  return parsed->samples;
}

// A poller polling a fake cache that answers `values` (a test may change them between
// rounds), once its first round is done.
class PolledCache {
 public:
  PolledCache(loop::Loop& loop, DnsmasqValues* values)
      : server(loop, ChaosStats(values)),
        poller(loop, PollerOptions(server.address()), registry),
        loop_(loop) {
    std::string error;
    REQUIRE(poller.Start(&error));
    REQUIRE(RunUntil(loop, [&] { return poller.rounds_done() >= 1; }));
  }

  // Waits for the round after the one that is running now.
  void NextRound() {
    const uint64_t rounds = poller.rounds_done();
    REQUIRE(RunUntil(loop_, [&] { return poller.rounds_done() > rounds; }));
  }

  FakeDnsServer server;
  metrics::Registry registry;
  DnsmasqPoller poller;

 private:
  loop::Loop& loop_;
};

TEST_CASE_METHOD(LoopFixture,
                 "The poller exports the cache's statistics with kube-dns's names, types and help",
                 "[sidecar][dnsmasq]") {
  DnsmasqValues values = {120, 30, 2, 28, 1000};
  PolledCache cache(loop, &values);
  const std::string text = cache.registry.Render();
  for (const char* expected : {
           "# HELP kubedns_dnsmasq_hits Number of DNS cache hits (from start of process)\n"
           "# TYPE kubedns_dnsmasq_hits counter\nkubedns_dnsmasq_hits 120\n",
           "# HELP kubedns_dnsmasq_misses Number of DNS cache misses (from start of process)\n"
           "# TYPE kubedns_dnsmasq_misses counter\nkubedns_dnsmasq_misses 30\n",
           "# HELP kubedns_dnsmasq_evictions Counter of DNS cache evictions (from start of "
           "process)\n# TYPE kubedns_dnsmasq_evictions counter\nkubedns_dnsmasq_evictions 2\n",
           "# HELP kubedns_dnsmasq_insertions Counter of DNS cache insertions (from start of "
           "process)\n# TYPE kubedns_dnsmasq_insertions counter\nkubedns_dnsmasq_insertions 28\n",
           "# HELP kubedns_dnsmasq_max_size Maximum size of the DNS cache\n"
           "# TYPE kubedns_dnsmasq_max_size counter\nkubedns_dnsmasq_max_size 1000\n",
           "# HELP kubedns_dnsmasq_errors Number of errors that have occurred getting metrics\n"
           "# TYPE kubedns_dnsmasq_errors counter\nkubedns_dnsmasq_errors 0\n",
           "kdns_sidecar_dnsmasq_cache_size 1000\n",
           "kdns_sidecar_dnsmasq_restarts_total 0\n",
       }) {
    CHECK_THAT(text, Catch::Contains(expected));
  }
  // The five CHAOS TXT questions, RD set.
  REQUIRE(cache.server.queries().size() >= 5);
  for (size_t i = 0; i < 5; ++i) {
    const dns::Question& q = cache.server.queries()[i].message.questions.at(0);
    CHECK(q.cls == dns::RrClass::kCh);
    CHECK(q.type == dns::RrType::kTxt);
    CHECK(cache.server.queries()[i].message.header.rd);
  }
}

TEST_CASE_METHOD(LoopFixture, "The poller's namespace follows --prometheus-namespace",
                 "[sidecar][dnsmasq]") {
  metrics::Registry registry;
  DnsmasqPoller::Options options = PollerOptions(ClosedPort(loop));
  options.prometheus_namespace = "skydns";
  DnsmasqPoller poller(loop, options, registry);
  const auto samples = Samples(registry);
  CHECK(samples.count("skydns_dnsmasq_hits") == 1);
  CHECK(samples.count("skydns_dnsmasq_errors") == 1);
  CHECK(samples.count("kubedns_dnsmasq_hits") == 0);
}

TEST_CASE_METHOD(LoopFixture, "Counters mirror the cache and never decrease when it restarts",
                 "[sidecar][dnsmasq]") {
  DnsmasqValues values = {100, 10, 0, 10, 1000};
  PolledCache cache(loop, &values);
  CHECK(Samples(cache.registry).at("kubedns_dnsmasq_hits") == 100);

  values = {150, 12, 0, 12, 1000};
  cache.NextRound();
  CHECK(Samples(cache.registry).at("kubedns_dnsmasq_hits") == 150);

  // The cache restarts: its counters start again from zero.
  values = {5, 1, 0, 1, 1000};
  cache.NextRound();
  auto samples = Samples(cache.registry);
  CHECK(samples.at("kubedns_dnsmasq_hits") == 155);
  CHECK(samples.at("kubedns_dnsmasq_misses") == 13);
  CHECK(samples.at("kubedns_dnsmasq_insertions") == 13);
  CHECK(samples.at("kubedns_dnsmasq_max_size") == 1000);
  CHECK(samples.at("kdns_sidecar_dnsmasq_restarts_total") == 1);

  values = {25, 1, 0, 1, 1000};
  cache.NextRound();
  CHECK(Samples(cache.registry).at("kubedns_dnsmasq_hits") == 175);
  CHECK(cache.poller.errors() == 0);
}

TEST_CASE_METHOD(LoopFixture,
                 "A malformed answer counts one error per round and exports nothing new",
                 "[sidecar][dnsmasq]") {
  DnsmasqValues values = {100, 10, 0, 10, 1000};
  PolledCache cache(loop, &values);

  // misses.bind. now answers "x" (and the others a higher hit count).
  values = {500, 10, 0, 10, 1000};
  auto good = ChaosStats(&values);
  cache.server.set_script(
      [good](const kdns::testing::ReceivedQuery& received) -> kdns::testing::Replies {
        const dns::Message& query = received.message;
        if (received.parsed && query.questions.at(0).name == *dns::Name::FromText("misses.bind.")) {
          dns::Message reply = ReplyTo(query);
          reply.answers.push_back({query.questions[0].name, dns::RrType::kTxt, dns::RrClass::kCh, 0,
                                   dns::RdataTxt{{"x"}}});
          return {Encode(reply)};
        }
        return good(received);
      });
  const uint64_t rounds = cache.poller.rounds_done();
  REQUIRE(RunUntil(loop, [&] { return cache.poller.rounds_done() >= rounds + 3; }));
  const auto samples = Samples(cache.registry);
  CHECK(samples.at("kubedns_dnsmasq_hits") == 100);  // not 500: the round was thrown away
  CHECK(samples.at("kubedns_dnsmasq_errors") ==
        static_cast<double>(cache.poller.rounds_done() - rounds));
  CHECK_THAT(cache.poller.last_error(),
             Catch::Contains("strconv.ParseInt: parsing \"x\": invalid syntax (for misses.bind.)"));

  // NOTIMP to everything (a server that does not publish statistics).
  cache.server.set_script(kdns::testing::AnswerRcode(dns::Rcode::kNotImp));
  const uint64_t errors = cache.poller.errors();
  REQUIRE(RunUntil(loop, [&] { return cache.poller.errors() >= errors + 2; }));
  CHECK_THAT(cache.poller.last_error(), Catch::Contains("invalid number of Answer records"));
  CHECK(Samples(cache.registry).at("kubedns_dnsmasq_hits") == 100);

  // It answers again: counting resumes.
  cache.server.set_script(ChaosStats(&values));
  REQUIRE(RunUntil(loop, [&] { return cache.poller.last_error().empty(); }));
  CHECK(Samples(cache.registry).at("kubedns_dnsmasq_hits") == 500);
}

TEST_CASE_METHOD(LoopFixture, "A silent or absent cache counts one error per round",
                 "[sidecar][dnsmasq]") {
  FakeDnsServer silent(loop, kdns::testing::Silent());
  metrics::Registry registry;
  DnsmasqPoller poller(loop, PollerOptions(silent.address(), 100), registry);
  std::string error;
  REQUIRE(poller.Start(&error));
  REQUIRE(RunUntil(loop, [&] { return poller.rounds_done() >= 2; }));
  CHECK(poller.errors() == poller.rounds_done());
  CHECK_THAT(poller.last_error(), Catch::EndsWith(": timeout"));
  CHECK(Samples(registry).at("kubedns_dnsmasq_hits") == 0);

  metrics::Registry registry2;
  DnsmasqPoller absent(loop, PollerOptions(ClosedPort(loop)), registry2);
  REQUIRE(absent.Start(&error));
  REQUIRE(RunUntil(loop, [&] { return absent.rounds_done() >= 2; }));
  CHECK(absent.errors() == absent.rounds_done());
  CHECK_THAT(absent.last_error(), Catch::EndsWith(": connection refused"));
}

}  // namespace
}  // namespace kdns::sidecar::testing

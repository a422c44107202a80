#include "sidecar/dnsmasq_stats.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/testing.h"
#include "sidecar/testing.h"

namespace kdns::sidecar::testing {
namespace {

using dns::testing::N;

dns::Message StatQuestion(DnsmasqStat stat) {
  dns::Message query;
  query.header.id = 77;
  query.header.rd = true;
  query.questions.push_back({N(DnsmasqStatQueryName(stat)), dns::RrType::kTxt, dns::RrClass::kCh});
  return query;
}

dns::ResourceRecord Txt(DnsmasqStat stat, std::vector<std::string> strings) {
  return {N(DnsmasqStatQueryName(stat)), dns::RrType::kTxt, dns::RrClass::kCh, 0,
          dns::RdataTxt{std::move(strings)}};
}

struct Parsed {
  bool ok;
  uint64_t value = 0;
  std::string error;
};

Parsed Parse(const std::vector<uint8_t>& reply, DnsmasqStat stat) {
  Parsed parsed{};
  parsed.ok = ParseStatReply(reply, stat, &parsed.value, &parsed.error);
  return parsed;
}

TEST_CASE("The CHAOS names are dnsmasq's", "[sidecar][dnsmasq]") {
  CHECK(DnsmasqStatQueryName(DnsmasqStat::kHits) == "hits.bind.");
  CHECK(DnsmasqStatQueryName(DnsmasqStat::kMisses) == "misses.bind.");
  CHECK(DnsmasqStatQueryName(DnsmasqStat::kEvictions) == "evictions.bind.");
  CHECK(DnsmasqStatQueryName(DnsmasqStat::kInsertions) == "insertions.bind.");
  CHECK(DnsmasqStatQueryName(DnsmasqStat::kCacheSize) == "cachesize.bind.");
}

TEST_CASE("A dnsmasq statistics reply gives its number", "[sidecar][dnsmasq]") {
  dns::Message reply = ReplyTo(StatQuestion(DnsmasqStat::kHits));
  reply.answers.push_back(Txt(DnsmasqStat::kHits, {"12345"}));
  Parsed parsed = Parse(Encode(reply), DnsmasqStat::kHits);
  REQUIRE(parsed.ok);
  CHECK(parsed.value == 12345);

  reply.answers[0] = Txt(DnsmasqStat::kHits, {"0"});
  CHECK(Parse(Encode(reply), DnsmasqStat::kHits).value == 0);
  reply.answers[0] = Txt(DnsmasqStat::kHits, {"9223372036854775807"});
  CHECK(Parse(Encode(reply), DnsmasqStat::kHits).value == 9223372036854775807ull);
}

TEST_CASE("Malformed statistics replies are errors with kube-dns's texts", "[sidecar][dnsmasq]") {
  const DnsmasqStat stat = DnsmasqStat::kMisses;
  const dns::Message base = ReplyTo(StatQuestion(stat));
  struct Case {
    const char* what;
    std::vector<uint8_t> reply;
    const char* error;
  };
  std::vector<Case> cases;
  {
    dns::Message m = ReplyTo(StatQuestion(stat), dns::Rcode::kNotImp);
    cases.push_back({"NOTIMP, no answer", Encode(m),
                     "invalid number of Answer records for misses.bind.: 0 (rcode NOTIMP)"});
  }
  {
    dns::Message m = base;
    m.answers = {Txt(stat, {"1"}), Txt(stat, {"2"})};
    cases.push_back(
        {"two answers", Encode(m), "invalid number of Answer records for misses.bind.: 2"});
  }
  {
    dns::Message m = base;
    m.answers.push_back({N("misses.bind."), dns::RrType::kA, dns::RrClass::kIn, 0, A("192.0.2.1")});
    cases.push_back({"an A record", Encode(m), "missing TXT record for misses.bind."});
  }
  {
    dns::Message m = base;
    m.answers = {Txt(stat, {"1", "2"})};
    cases.push_back(
        {"two strings", Encode(m), "invalid number of TXT records for misses.bind.: 2"});
  }
  for (const char* text : {"", "12a", "-1", "1.5", " 1", "99999999999999999999", "+"}) {
    dns::Message m = base;
    m.answers = {Txt(stat, {text})};
    cases.push_back({text, Encode(m), "strconv.ParseInt: parsing"});
  }
  cases.push_back({"garbage",
                   {0x00, 0x4d, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 6, 'm'},
                   "malformed reply for misses.bind."});
  cases.push_back({"empty", {}, "malformed reply for misses.bind."});
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Parsed parsed = Parse(c.reply, stat);
    CHECK_FALSE(parsed.ok);
    CHECK_THAT(parsed.error, Catch::Contains(c.error));
  }
}

DnsmasqValues Values(uint64_t hits, uint64_t misses, uint64_t evictions, uint64_t insertions,
                     uint64_t size) {
  return {hits, misses, evictions, insertions, size};
}

TEST_CASE("Counters mirror the cache's absolute values", "[sidecar][dnsmasq]") {
  CounterMirror mirror;
  CHECK_FALSE(mirror.observed());
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 0);
  CHECK_FALSE(mirror.Observe(Values(100, 10, 1, 20, 1000)));
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 100);
  CHECK(mirror.Exported(DnsmasqStat::kMisses) == 10);
  CHECK(mirror.Exported(DnsmasqStat::kEvictions) == 1);
  CHECK(mirror.Exported(DnsmasqStat::kInsertions) == 20);
  CHECK(mirror.Exported(DnsmasqStat::kCacheSize) == 1000);
  CHECK_FALSE(mirror.Observe(Values(150, 10, 1, 25, 1000)));
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 150);
  CHECK(mirror.Exported(DnsmasqStat::kInsertions) == 25);
  CHECK(mirror.restarts() == 0);
}

TEST_CASE("Counters never decrease across a restart of the cache", "[sidecar][dnsmasq]") {
  CounterMirror mirror;
  (void)mirror.Observe(Values(100, 10, 1, 20, 1000));
  (void)mirror.Observe(Values(150, 12, 1, 22, 1000));
  // The cache restarts: every counter falls back to (near) zero.
  CHECK(mirror.Observe(Values(3, 1, 0, 1, 1000)));
  CHECK(mirror.restarts() == 1);
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 153);  // 150 of the first generation + 3
  CHECK(mirror.Exported(DnsmasqStat::kMisses) == 13);
  CHECK(mirror.Exported(DnsmasqStat::kEvictions) == 1);
  CHECK(mirror.Exported(DnsmasqStat::kInsertions) == 23);
  CHECK(mirror.Exported(DnsmasqStat::kCacheSize) == 1000);  // a setting, not summed
  CHECK(mirror.Current(DnsmasqStat::kHits) == 3);
  // Counting goes on in the new generation.
  CHECK_FALSE(mirror.Observe(Values(40, 5, 0, 4, 1000)));
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 190);
  // A second restart adds a second completed generation.
  CHECK(mirror.Observe(Values(0, 0, 0, 0, 1000)));
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 190);
  CHECK(mirror.Observe(Values(1, 0, 0, 0, 1000)) == false);
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 191);
  CHECK(mirror.restarts() == 2);
}

TEST_CASE("A restart shows in any one counter, even when another has caught up",
          "[sidecar][dnsmasq]") {
  CounterMirror mirror;
  (void)mirror.Observe(Values(100, 50, 0, 50, 1000));
  // After the restart the hits are already past 100, but the misses went back.
  CHECK(mirror.Observe(Values(120, 2, 0, 2, 1000)));
  CHECK(mirror.Exported(DnsmasqStat::kHits) == 220);
  CHECK(mirror.Exported(DnsmasqStat::kMisses) == 52);
}

TEST_CASE("The exported cache size is the highest seen and never goes down", "[sidecar][dnsmasq]") {
  CounterMirror mirror;
  (void)mirror.Observe(Values(0, 0, 0, 0, 1000));
  (void)mirror.Observe(Values(0, 0, 0, 0, 500));
  CHECK(mirror.Exported(DnsmasqStat::kCacheSize) == 1000);
  CHECK(mirror.Current(DnsmasqStat::kCacheSize) == 500);
  (void)mirror.Observe(Values(0, 0, 0, 0, 2000));
  CHECK(mirror.Exported(DnsmasqStat::kCacheSize) == 2000);
}

TEST_CASE("Exported counters never decrease over any sequence of rounds", "[sidecar][dnsmasq]") {
  // Generated: values that climb and sometimes fall back (restarts).
  CounterMirror mirror;
  uint64_t seed = 12345;
  DnsmasqValues values{};
  DnsmasqValues previous{};
  for (int round = 0; round < 500; ++round) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    if ((seed >> 60) == 0) {
      values = {};
    } else {
      for (size_t i = 0; i < 4; ++i) values[i] += (seed >> (8 * i)) & 0x3f;
    }
    values[4] = 1000;
    (void)mirror.Observe(values);
    for (DnsmasqStat stat : kAllDnsmasqStats) {
      const size_t i = static_cast<size_t>(stat);
      CHECK(mirror.Exported(stat) >= previous[i]);
      previous[i] = mirror.Exported(stat);
    }
  }
}

}  // namespace
}  // namespace kdns::sidecar::testing

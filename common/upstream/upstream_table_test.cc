#include "common/upstream/upstream_table.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <string>
#include <thread>
#include <vector>

#include "common/base/clock.h"
#include "common/dns/testing.h"
#include "common/limits/limits.h"

namespace kdns::upstream {
namespace {

using dns::testing::N;

loop::SocketAddress Addr(const char* text) { return *loop::SocketAddress::Parse(text); }

TEST_CASE("The table counts per upstream and formats servers.bind lines", "[upstream]") {
  UpstreamTable table;
  auto& entry = table.Get(Addr("10.0.0.1:53"));
  entry.sent.Inc(5);
  entry.failed.Inc(2);
  CHECK(&table.Get(Addr("10.0.0.1:53")) == &entry);
  table.Get(Addr("[fd00::1]:5353"));
  auto entries = table.Entries();
  REQUIRE(entries.size() == 2);
  CHECK(UpstreamTable::ServersBindText(*entries[0]) == "10.0.0.1#53 5 2");
  CHECK(UpstreamTable::ServersBindText(*entries[1]) == "fd00::1#5353 0 0");
}

TEST_CASE("Loop probes have unique names that only we recognise", "[upstream]") {
  UpstreamTable table;
  SecureRandom random;
  const auto upstream = Addr("10.0.0.1:53");
  const auto back = Addr("10.0.0.1:40000");  // the upstream forwarding it, from any port
  dns::Name probe = table.NewLoopProbe(upstream, random);
  dns::Name other = table.NewLoopProbe(upstream, random);
  CHECK_FALSE(probe == other);
  CHECK(probe.IsSubdomainOf(N("kdns-loop-check.")));
  CHECK(probe.label_count() == 2);
  CHECK(table.MatchLoopProbe(probe, back) == upstream);
  // Names are matched ignoring case, as a resolver may have changed it (0x20).
  std::string text = other.ToText();
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(table.MatchLoopProbe(N(text), back) == upstream);
  CHECK_FALSE(table.MatchLoopProbe(N("0123456789abcdef.kdns-loop-check."), back).has_value());
  CHECK_FALSE(table.MatchLoopProbe(N("www.example."), back).has_value());
  CHECK_FALSE(UpstreamTable::IsLoopProbeName(N("kdns-loop-check.")));
}

TEST_CASE("A loop probe is accepted once, from its upstream's side, for a few seconds",
          "[upstream]") {
  ManualClock clock(1'000'000);
  const IpAddress pod_ip = *IpAddress::Parse("10.244.1.7");
  UpstreamTable table({*IpAddress::Parse("127.0.0.1"), pod_ip, *IpAddress::Parse("::1")}, clock);
  SecureRandom random;
  const auto upstream = Addr("192.0.2.53:53");
  const uint64_t rejected_before = limits::LimitHits(limits::Limit::kLoopProbeRejected);
  auto rejected = [&] {
    return limits::LimitHits(limits::Limit::kLoopProbeRejected) - rejected_before;
  };

  SECTION("single use: a replay from the upstream itself disables nothing") {
    dns::Name probe = table.NewLoopProbe(upstream, random);
    CHECK(table.MatchLoopProbe(probe, Addr("192.0.2.53:4711")) == upstream);
    CHECK_FALSE(table.MatchLoopProbe(probe, Addr("192.0.2.53:4711")).has_value());
    CHECK(rejected() == 1);
  }
  SECTION("expiry: accepted just before kLoopProbeLifetimeMs, not at it") {
    dns::Name early = table.NewLoopProbe(upstream, random);
    dns::Name late = table.NewLoopProbe(upstream, random);
    clock.AdvanceMs(UpstreamTable::kLoopProbeLifetimeMs - 1);
    CHECK(table.MatchLoopProbe(early, Addr("192.0.2.53:4711")) == upstream);
    clock.AdvanceMs(1);
    CHECK_FALSE(table.MatchLoopProbe(late, Addr("192.0.2.53:4711")).has_value());
    CHECK(rejected() == 1);
  }
  SECTION("another source (a pod that learned the name) is refused and the probe kept") {
    dns::Name probe = table.NewLoopProbe(upstream, random);
    CHECK_FALSE(table.MatchLoopProbe(probe, Addr("10.244.3.9:5353")).has_value());
    CHECK_FALSE(table.MatchLoopProbe(probe, Addr("127.0.0.1:5353")).has_value());
    CHECK_FALSE(table.MatchLoopProbe(probe, Addr("192.0.2.54:53")).has_value());
    CHECK(rejected() == 3);
    // The real loop still gets through afterwards.
    CHECK(table.MatchLoopProbe(probe, Addr("192.0.2.53:53")) == upstream);
  }
  SECTION("an upstream on this host may send it from any of the host's addresses") {
    const auto local_resolver = Addr("127.0.0.53:53");
    dns::Name probe = table.NewLoopProbe(local_resolver, random);
    CHECK_FALSE(table.MatchLoopProbe(probe, Addr("127.0.0.2:5353")).has_value());  // not ours
    CHECK_FALSE(table.MatchLoopProbe(probe, Addr("10.244.3.9:5353")).has_value());
    CHECK(table.MatchLoopProbe(probe, Addr("10.244.1.7:33000")) == local_resolver);
    dns::Name again = table.NewLoopProbe(Addr("127.0.0.1:10053"), random);
    CHECK(table.MatchLoopProbe(again, Addr("[::1]:33000")) == Addr("127.0.0.1:10053"));
    CHECK(rejected() == 2);
  }
  SECTION("a v4 source seen on a dual-stack socket matches the v4 upstream") {
    dns::Name probe = table.NewLoopProbe(upstream, random);
    CHECK(table.MatchLoopProbe(probe, Addr("[::ffff:192.0.2.53]:4711")) == upstream);
  }
  SECTION("without host addresses only the upstream's own address counts") {
    UpstreamTable bare({}, clock);
    dns::Name probe = bare.NewLoopProbe(Addr("127.0.0.53:53"), random);
    CHECK_FALSE(bare.MatchLoopProbe(probe, Addr("127.0.0.1:5353")).has_value());
    CHECK(bare.MatchLoopProbe(probe, Addr("127.0.0.53:5353")) == Addr("127.0.0.53:53"));
  }
}

TEST_CASE("Disabling an upstream for a loop happens once, from any thread", "[upstream]") {
  UpstreamTable table;
  const auto upstream = Addr("10.0.0.1:53");
  CHECK_FALSE(table.IsDisabled(upstream));
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::atomic<int> first{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (table.Disable(upstream, "loop detected")) ++first;
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(first == 1);
  CHECK(table.IsDisabled(upstream));
}

}  // namespace
}  // namespace kdns::upstream

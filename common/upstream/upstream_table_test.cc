#include "common/upstream/upstream_table.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <string>
#include <thread>
#include <vector>

#include "common/dns/testing.h"

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
  dns::Name probe = table.NewLoopProbe(upstream, random);
  dns::Name other = table.NewLoopProbe(upstream, random);
  CHECK_FALSE(probe == other);
  CHECK(probe.IsSubdomainOf(N("kdns-loop-check.")));
  CHECK(probe.label_count() == 2);
  CHECK(table.MatchLoopProbe(probe) == upstream);
  // Names are matched ignoring case, as a resolver may have changed it (0x20).
  std::string text = probe.ToText();
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  dns::Name upper = N(text);
  CHECK(table.MatchLoopProbe(upper) == upstream);
  CHECK_FALSE(table.MatchLoopProbe(N("0123456789abcdef.kdns-loop-check.")).has_value());
  CHECK_FALSE(table.MatchLoopProbe(N("www.example.")).has_value());
  CHECK_FALSE(UpstreamTable::IsLoopProbeName(N("kdns-loop-check.")));
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

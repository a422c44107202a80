#include "common/loop/tcp_limits.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace kdns::loop {
namespace {

using Verdict = TcpConnectionCaps::Verdict;

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

TEST_CASE("TcpConnectionCaps admits up to the total cap and says which cap is full",
          "[loop][tcp_limits]") {
  TcpConnectionCaps caps(3, 2);
  TcpConnectionCaps::Slot a1, a2, a3, b1, c1;
  REQUIRE(caps.TryAcquire(Ip("10.0.0.1"), &a1) == Verdict::kAdmitted);
  REQUIRE(caps.TryAcquire(Ip("10.0.0.1"), &a2) == Verdict::kAdmitted);
  CHECK(caps.TryAcquire(Ip("10.0.0.1"), &a3) == Verdict::kOverSource);
  CHECK_FALSE(a3.held());
  REQUIRE(caps.TryAcquire(Ip("10.0.0.2"), &b1) == Verdict::kAdmitted);
  CHECK(caps.TryAcquire(Ip("10.0.0.3"), &c1) == Verdict::kOverTotal);
  CHECK(caps.open() == 3);
  CHECK(caps.open_from(Ip("10.0.0.1")) == 2);
  a1.Release();
  CHECK(caps.open_from(Ip("10.0.0.1")) == 1);
  CHECK(caps.TryAcquire(Ip("10.0.0.3"), &c1) == Verdict::kAdmitted);
}

TEST_CASE("A slot gives its place back once, when released, reassigned or destroyed",
          "[loop][tcp_limits]") {
  TcpConnectionCaps caps(10, 10);
  {
    TcpConnectionCaps::Slot slot;
    REQUIRE(caps.TryAcquire(Ip("::1"), &slot) == Verdict::kAdmitted);
    TcpConnectionCaps::Slot moved = std::move(slot);
    CHECK_FALSE(slot.held());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    CHECK(moved.held());
    CHECK(caps.open() == 1);
    moved.Release();
    moved.Release();
    CHECK(caps.open() == 0);
    REQUIRE(caps.TryAcquire(Ip("::1"), &moved) == Verdict::kAdmitted);
  }
  CHECK(caps.open() == 0);
  CHECK(caps.open_from(Ip("::1")) == 0);
}

TEST_CASE("TcpConnectionCaps holds across threads", "[loop][tcp_limits]") {
  TcpConnectionCaps caps(8, 8);
  std::atomic<int> admitted_max{0};
  std::atomic<int> admitted_now{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const IpAddress source = Ip(t % 2 == 0 ? "10.0.0.1" : "10.0.0.2");
      for (int i = 0; i < 2000; ++i) {
        TcpConnectionCaps::Slot slot;
        if (caps.TryAcquire(source, &slot) != Verdict::kAdmitted) continue;
        int now = ++admitted_now;
        int seen = admitted_max.load();
        while (now > seen && !admitted_max.compare_exchange_weak(seen, now)) {
        }
        --admitted_now;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(admitted_max.load() <= 8);
  CHECK(caps.open() == 0);
}

TEST_CASE("A place lent over the total cap is covered by the next slot released",
          "[loop][tcp_limits]") {
  TcpConnectionCaps caps(2, 2);
  TcpConnectionCaps::Slot a, b, lent, again;
  REQUIRE(caps.TryAcquire(Ip("10.0.0.1"), &a) == Verdict::kAdmitted);
  REQUIRE(caps.TryAcquire(Ip("10.0.0.1"), &b) == Verdict::kAdmitted);
  REQUIRE(caps.TryAcquireOver(Ip("10.0.0.2"), 1, &lent));
  CHECK(caps.open() == 3);
  CHECK(caps.open_from(Ip("10.0.0.2")) == 1);
  CHECK_FALSE(caps.TryAcquireOver(Ip("10.0.0.3"), 1, &again));  // one lent at most
  CHECK(caps.TryAcquire(Ip("10.0.0.3"), &again) == Verdict::kOverTotal);
  a.Release();  // covers the place lent: still at the cap
  CHECK(caps.open() == 2);
  CHECK(caps.TryAcquire(Ip("10.0.0.3"), &again) == Verdict::kOverTotal);
  lent.Release();
  CHECK(caps.open() == 1);
  CHECK(caps.TryAcquire(Ip("10.0.0.3"), &again) == Verdict::kAdmitted);
  // Never past the per-source cap, and nothing is left taken when refused.
  TcpConnectionCaps one_each(1, 1);
  TcpConnectionCaps::Slot first, second;
  REQUIRE(one_each.TryAcquire(Ip("10.0.0.1"), &first) == Verdict::kAdmitted);
  CHECK_FALSE(one_each.TryAcquireOver(Ip("10.0.0.1"), 5, &second));
  CHECK(one_each.open() == 1);
  first.Release();
  CHECK(one_each.open() == 0);
}

TEST_CASE("A request for room reaches every other serving thread, with one claim",
          "[loop][tcp_limits]") {
  TcpConnectionCaps caps(10, 10);
  std::vector<std::pair<int, TcpConnectionCaps::RoomRequest>> asked;
  auto maker = [&asked](int thread) {
    return [&asked, thread](const TcpConnectionCaps::RoomRequest& r) {
      asked.emplace_back(thread, r);
    };
  };
  const uint64_t first = caps.AddRoomMaker(maker(1));
  const uint64_t second = caps.AddRoomMaker(maker(2));
  (void)caps.AddRoomMaker(maker(3));
  CHECK(caps.room_makers() == 3);
  caps.AskForRoom(second, 7);
  REQUIRE(asked.size() == 2);
  CHECK(asked[0].first == 1);
  CHECK(asked[1].first == 3);
  CHECK(asked[0].second.newcomer_source_connections == 7);
  CHECK(asked[0].second.claim == asked[1].second.claim);
  CHECK_FALSE(asked[0].second.claim->exchange(true));  // the first to claim closes one
  CHECK(asked[1].second.claim->exchange(true));
  caps.RemoveRoomMaker(first);
  asked.clear();
  caps.AskForRoom(0, 1);
  CHECK(asked.size() == 2);
  CHECK(caps.room_makers() == 2);
}

TEST_CASE("The heaviest source's count is known at the cap", "[loop][tcp_limits]") {
  TcpConnectionCaps caps(10, 10);
  CHECK(caps.max_from_one_source() == 0);
  std::vector<TcpConnectionCaps::Slot> slots(5);
  for (size_t i = 0; i < 3; ++i)
    REQUIRE(caps.TryAcquire(Ip("10.0.0.1"), &slots[i]) == Verdict::kAdmitted);
  REQUIRE(caps.TryAcquire(Ip("10.0.0.2"), &slots[3]) == Verdict::kAdmitted);
  CHECK(caps.max_from_one_source() == 3);
  slots[0].Release();
  slots[1].Release();
  CHECK(caps.max_from_one_source() == 1);
}

TEST_CASE("At the total cap the heaviest source loses a connection, idle ones first",
          "[loop][tcp_limits]") {
  using C = EvictionCandidate;
  SECTION("four sources hold every slot with queries in flight: a light newcomer gets one") {
    std::vector<C> held;
    for (uint64_t i = 0; i < 128; ++i) held.push_back(C{32, false, i});
    CHECK(PickEvictionVictim(held, 0) == size_t{0});  // the oldest
  }
  SECTION("of the heaviest source, the connection idle longest, before any busy one") {
    const std::vector<C> candidates = {C{5, false, 1}, C{5, true, 9}, C{5, true, 7}, C{2, true, 0},
                                       C{1, true, 0}};
    CHECK(PickEvictionVictim(candidates, 0) == size_t{2});
  }
  SECTION("the heaviest source's busy connection before a lighter source's idle one") {
    const std::vector<C> candidates = {C{1, true, 0}, C{30, false, 5}, C{30, false, 3}};
    CHECK(PickEvictionVictim(candidates, 0) == size_t{2});
  }
  SECTION("many pods with one idle connection each: the one idle longest, as before") {
    const std::vector<C> candidates = {C{1, true, 4}, C{1, true, 2}, C{1, true, 3}};
    CHECK(PickEvictionVictim(candidates, 0) == size_t{1});
  }
  SECTION("a source never takes a connection from a lighter one") {
    const std::vector<C> candidates = {C{3, true, 0}, C{2, true, 0}};
    CHECK_FALSE(PickEvictionVictim(candidates, 4));
  }
  SECTION("an equal source gives up an idle connection, a busy one only to a lighter source") {
    CHECK(PickEvictionVictim(std::vector<C>{C{4, true, 0}}, 4) == size_t{0});
    CHECK_FALSE(PickEvictionVictim(std::vector<C>{C{4, false, 0}}, 4));
    CHECK_FALSE(PickEvictionVictim(std::vector<C>{C{4, false, 0}}, 3));
    CHECK(PickEvictionVictim(std::vector<C>{C{4, false, 0}}, 2) == size_t{0});
  }
  SECTION("an attacker reconnecting after losing a connection gets none back") {
    std::vector<C> held;
    for (uint64_t i = 0; i < 96; ++i) held.push_back(C{32, false, i});
    for (uint64_t i = 0; i < 31; ++i) held.push_back(C{31, false, 100 + i});
    held.push_back(C{1, false, 200});  // the victim's dig
    CHECK_FALSE(PickEvictionVictim(held, 31));
  }
  SECTION("nothing to close") { CHECK_FALSE(PickEvictionVictim({}, 0)); }
}

TEST_CASE("OutputBudget charges what fits and takes back what is released", "[loop][tcp_limits]") {
  OutputBudget budget(100);
  CHECK(budget.TryCharge(60));
  CHECK_FALSE(budget.TryCharge(41));
  CHECK(budget.used() == 60);
  CHECK(budget.TryCharge(40));
  budget.Release(60);
  CHECK(budget.used() == 40);
  OutputBudget unbounded(0);
  CHECK(unbounded.TryCharge(size_t{1} << 40));
}

}  // namespace
}  // namespace kdns::loop

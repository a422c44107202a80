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

TEST_CASE("IpOf gives a socket address's IP", "[loop][tcp_limits]") {
  CHECK(IpOf(*SocketAddress::Parse("127.0.0.2:53")) == Ip("127.0.0.2"));
  CHECK(IpOf(*SocketAddress::Parse("[2001:db8::1]:53")) == Ip("2001:db8::1"));
}

TEST_CASE("SocketAddressOf is IpOf's inverse, with the port", "[loop][tcp_limits]") {
  CHECK(SocketAddressOf(Ip("10.1.2.3"), 41000) == *SocketAddress::Parse("10.1.2.3:41000"));
  CHECK(SocketAddressOf(Ip("fd00::17"), 53) == *SocketAddress::Parse("[fd00::17]:53"));
}

}  // namespace
}  // namespace kdns::loop

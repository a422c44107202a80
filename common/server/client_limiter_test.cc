#include "common/server/client_limiter.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/server/waiting_queries.h"

namespace kdns::server {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kWindow = RateTable::kWindowNs;

loop::SocketAddress Client(const std::string& ip, uint16_t port = 40000) {
  return *loop::SocketAddress::FromHostPort(ip, port);
}

ClientLimitOptions Limit(uint32_t rate, uint32_t burst, uint32_t slip) {
  ClientLimitOptions options;
  options.rate = rate;
  options.burst = burst;
  options.slip = slip;
  options.shed = false;
  return options;
}

// How many of `count` queries at `now` pass.
int Passed(ClientLimiter& limiter, const loop::SocketAddress& client, int count, uint64_t now) {
  int passed = 0;
  for (int i = 0; i < count; ++i) passed += limiter.Check(client, now) == ClientVerdict::kPass;
  return passed;
}

TEST_CASE("a client gets its burst at once, then the rate", "[client_limit]") {
  ClientLimiter limiter(Limit(100, 20, 0));
  const auto client = Client("10.0.0.1");
  uint64_t now = 5 * kSecond;
  CHECK(Passed(limiter, client, 50, now) == 20);
  // 100/s: one more every 10 ms.
  now += 10'000'000;
  CHECK(Passed(limiter, client, 5, now) == 1);
  now += 95'000'000;
  CHECK(Passed(limiter, client, 50, now) == 9);
  // Over a long run a flooder gets the rate and no more.
  int passed = 0;
  for (int ms = 0; ms < 10'000; ++ms) passed += Passed(limiter, client, 3, now + ms * 1'000'000ull);
  CHECK(passed >= 999);
  CHECK(passed <= 1001);
  // Idle for a second: the bucket is full again, not more.
  now += 20 * kSecond;
  CHECK(Passed(limiter, client, 50, now) == 20);
}

TEST_CASE("the limit is per client, and a client is its prefix", "[client_limit]") {
  ClientLimitOptions options = Limit(10, 0, 0);
  options.prefix_v4 = 24;
  ClientLimiter limiter(options);
  const uint64_t now = kSecond;
  CHECK(Passed(limiter, Client("10.0.0.1"), 10, now) == 10);
  CHECK(Passed(limiter, Client("10.0.0.200", 53), 5, now) == 0);  // the same /24
  CHECK(Passed(limiter, Client("10.0.1.1"), 10, now) == 10);
  CHECK(Passed(limiter, Client("2001:db8:0:1::1"), 10, now) == 10);
  CHECK(Passed(limiter, Client("2001:db8:0:1:ffff::2"), 5, now) == 0);  // the same /64
  CHECK(Passed(limiter, Client("2001:db8:0:2::1"), 10, now) == 10);
  CHECK(limiter.tracked() == 4);
}

TEST_CASE("every slip-th limited query is answered with TC", "[client_limit]") {
  ClientLimiter limiter(Limit(1, 1, 3));
  const auto client = Client("10.0.0.1");
  CHECK(limiter.Check(client, kSecond) == ClientVerdict::kPass);
  std::vector<ClientVerdict> verdicts;
  verdicts.reserve(6);
  for (int i = 0; i < 6; ++i) verdicts.push_back(limiter.Check(client, kSecond));
  const std::vector<ClientVerdict> expected = {ClientVerdict::kLimited, ClientVerdict::kLimited,
                                               ClientVerdict::kSlip,    ClientVerdict::kLimited,
                                               ClientVerdict::kLimited, ClientVerdict::kSlip};
  CHECK(verdicts == expected);
  CHECK(limiter.slipped() == 2);
}

TEST_CASE("exempt prefixes and a zero rate are never limited", "[client_limit]") {
  ClientLimiter off(Limit(0, 0, 2));
  CHECK_FALSE(off.enabled());
  CHECK(Passed(off, Client("10.0.0.1"), 1000, kSecond) == 1000);
  CHECK(off.memory_bytes() == 0);
  ClientLimitOptions options = Limit(1, 0, 0);
  std::string error;
  REQUIRE(ParsePrefixList("10.96.0.0/12, fd00::/8,", &options.exempt, &error));
  ClientLimiter limiter(options);
  CHECK(Passed(limiter, Client("10.96.0.10"), 1000, kSecond) == 1000);
  CHECK(Passed(limiter, Client("fd00::53"), 1000, kSecond) == 1000);
  CHECK(Passed(limiter, Client("10.112.0.1"), 1000, kSecond) == 1);
  CHECK(limiter.tracked() == 1);  // the exempt are not tracked
}

TEST_CASE("the table never grows, and idle clients make room first", "[client_limit]") {
  ClientLimitOptions options = Limit(10, 10, 0);
  options.slots = 64;
  ClientLimiter limiter(options);
  CHECK(limiter.capacity() == 64);
  CHECK(limiter.memory_bytes() == 64 * 64);
  // Any sequence of clients and times stays within the table.
  std::mt19937_64 random(7);
  uint64_t now = kSecond;
  for (int i = 0; i < 100'000; ++i) {
    now += random() % 1'000'000;
    const std::string ip = random() % 2 == 0
                               ? "10." + std::to_string(random() % 4) + "." +
                                     std::to_string(random() % 256) + "." +
                                     std::to_string(random() % 256)
                               : "2001:db8:" + std::to_string(random() % 1000) + "::1";
    (void)limiter.Check(Client(ip), now);
    REQUIRE(limiter.tracked() <= limiter.capacity());
  }
  CHECK(limiter.tracked() == limiter.capacity());
  // A limited flooder keeps its state while a stream of one-off clients passes through:
  // they were seen longer ago, and go first.
  const auto flooder = Client("192.0.2.1");
  now += 10 * kSecond;
  CHECK(Passed(limiter, flooder, 20, now) == 10);
  for (int i = 0; i < 10'000; ++i) {
    now += 1000;
    (void)limiter.Check(
        Client("198.51." + std::to_string(i / 256 % 256) + "." + std::to_string(i % 256)),
        now - 2 * kSecond);
    (void)limiter.Check(flooder, now);
  }
  CHECK(Passed(limiter, flooder, 5, now) == 0);
}

TEST_CASE("threads share the limit without losing or inventing tokens", "[client_limit]") {
  ClientLimiter limiter(Limit(1000, 1000, 0));
  const auto client = Client("10.0.0.1");
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] { passed += Passed(limiter, client, 5000, kSecond); });
  }
  for (auto& thread : threads) thread.join();
  CHECK(passed == 1000);
}

// Shedding.

ClientLimitOptions ShedOnly() {
  ClientLimitOptions options;
  options.slots = 1024;
  return options;
}

// Sends `per_window` queries from each client in every window from `*now` for `windows`
// windows, ticking with `seen` every kTickNs; returns how many of each client's passed.
std::vector<int> Run(ClientLimiter& limiter, const std::vector<loop::SocketAddress>& clients,
                     const std::vector<int>& per_window, int windows, Overload seen,
                     uint64_t* now) {
  std::vector<int> passed(clients.size());
  for (int w = 0; w < windows; ++w) {
    const uint64_t start = *now;
    for (size_t c = 0; c < clients.size(); ++c) {
      for (int q = 0; q < per_window[c]; ++q) {
        const uint64_t at =
            start + kWindow * static_cast<uint64_t>(q) / static_cast<uint64_t>(per_window[c]);
        passed[c] += limiter.Check(clients[c], at) == ClientVerdict::kPass;
      }
    }
    for (uint64_t t = start; t < start + kWindow; t += ClientLimiter::kTickNs)
      limiter.Tick(t, seen);
    *now = start + kWindow;
  }
  return passed;
}

TEST_CASE("without overload nobody is shed, however heavy", "[client_limit]") {
  ClientLimiter limiter(ShedOnly());
  uint64_t now = kSecond;
  const std::vector<loop::SocketAddress> clients = {Client("10.0.0.1"), Client("10.0.0.2")};
  const auto passed = Run(limiter, clients, {5000, 10}, 8, Overload::kNone, &now);
  const std::vector<int> all = {40000, 80};
  CHECK(passed == all);
  CHECK(limiter.shed_cap() == ClientLimiter::kNotShedding);
}

TEST_CASE("under overload the heaviest are shed first and the light keep everything",
          "[client_limit]") {
  ClientLimiter limiter(ShedOnly());
  uint64_t now = kSecond;
  const std::vector<loop::SocketAddress> clients = {Client("10.0.0.1"), Client("10.0.0.2"),
                                                    Client("10.0.0.3"), Client("10.0.0.4"),
                                                    Client("10.0.0.5")};
  const std::vector<int> load = {4000, 1000, 50, 40, 30};
  Run(limiter, clients, load, 2, Overload::kNone, &now);
  // Overloaded for a while: the cap falls, but never below the median client (50).
  const auto overloaded = Run(limiter, clients, load, 12, Overload::kReceiveBacklog, &now);
  CHECK(limiter.shed_cap() != ClientLimiter::kNotShedding);
  CHECK(limiter.shed_cap() >= 50);
  CHECK(limiter.shed_reason() == Overload::kReceiveBacklog);
  CHECK(overloaded[2] == 12 * 50);
  CHECK(overloaded[3] == 12 * 40);
  CHECK(overloaded[4] == 12 * 30);
  CHECK(overloaded[0] < 12 * 4000 / 2);
  // The heaviest lost the most.
  CHECK(12 * 4000 - overloaded[0] > 12 * 1000 - overloaded[1]);
  // Once the cap has settled, every heavy client gets the same share per window.
  const auto settled = Run(limiter, clients, load, 1, Overload::kReceiveBacklog, &now);
  CHECK(settled[0] == settled[1]);
  CHECK(settled[0] >= 50);
  const auto top = limiter.Top(2, now - 1);
  REQUIRE(top.size() == 2);
  CHECK(top[0].client.ToString() == "10.0.0.1/32");
  CHECK(top[0].shed);
  CHECK(top[0].queries_per_second > top[1].queries_per_second);
  // A second after the overload ends the cap rises, and soon is gone.
  const auto after = Run(limiter, clients, load, 40, Overload::kNone, &now);
  CHECK(limiter.shed_cap() == ClientLimiter::kNotShedding);
  const auto again = Run(limiter, clients, load, 1, Overload::kNone, &now);
  CHECK(again == load);
  (void)after;
}

TEST_CASE("a nearly full waiting budget is overload too", "[client_limit]") {
  auto budget = std::make_shared<WaitingBudget>(100);
  ClientLimitOptions options = ShedOnly();
  options.waiting = budget;
  ClientLimiter limiter(options);
  uint64_t now = kSecond;
  const std::vector<loop::SocketAddress> clients = {Client("10.0.0.1"), Client("10.0.0.2")};
  Run(limiter, clients, {2000, 20}, 4, Overload::kNone, &now);
  CHECK(limiter.shed_cap() == ClientLimiter::kNotShedding);
  for (int i = 0; i < 90; ++i) REQUIRE(budget->TryTake());
  const auto passed = Run(limiter, clients, {2000, 20}, 4, Overload::kNone, &now);
  CHECK(limiter.shed_reason() == Overload::kWaitingQueries);
  CHECK(passed[1] == 4 * 20);
  CHECK(passed[0] < 4 * 2000);
  budget->Give(90);
}

TEST_CASE("the waiting budget keeps its last tenth for light clients", "[client_limit]") {
  auto budget = std::make_shared<WaitingBudget>(100);
  ClientLimitOptions options = ShedOnly();
  options.waiting = budget;
  auto limiter = std::make_shared<ClientLimiter>(options);
  budget->KeepReserveFor(limiter);
  uint64_t now = kSecond;
  const auto heavy = Client("10.0.0.1");
  const auto light = Client("10.0.0.2");
  // No rates looked at yet: everyone may take every slot.
  for (int i = 0; i < 95; ++i)
    REQUIRE(budget->TryTakeFor(heavy, now) == WaitingBudget::Take::kTaken);
  budget->Give(95);
  Run(*limiter, {heavy, light, Client("10.0.0.3")}, {3000, 20, 10}, 2, Overload::kNone, &now);
  for (int i = 0; i < 60; ++i) REQUIRE(budget->TryTake());
  now += ClientLimiter::kTickNs;
  limiter->Tick(now, Overload::kNone);  // over half full: the median is looked at
  for (int i = 0; i < 30; ++i)
    REQUIRE(budget->TryTakeFor(heavy, now) == WaitingBudget::Take::kTaken);
  // 90 taken: the rest is for the light.
  CHECK(budget->TryTakeFor(heavy, now) == WaitingBudget::Take::kReserved);
  for (int i = 0; i < 10; ++i) CHECK(budget->TryTakeFor(light, now) == WaitingBudget::Take::kTaken);
  CHECK(budget->TryTakeFor(light, now) == WaitingBudget::Take::kFull);
  CHECK(budget->TryTakeFor(Client("192.0.2.9"), now) == WaitingBudget::Take::kFull);  // unknown
  budget->Give(100);
  // Without a limiter (or once it is gone) there is no reserve.
  limiter.reset();
  for (int i = 0; i < 100; ++i)
    REQUIRE(budget->TryTakeFor(heavy, now) == WaitingBudget::Take::kTaken);
  budget->Give(100);
}

TEST_CASE("one client alone is never shed: there is no one to be fair to", "[client_limit]") {
  ClientLimiter limiter(ShedOnly());
  uint64_t now = kSecond;
  const auto passed =
      Run(limiter, {Client("10.0.0.1")}, {3000}, 6, Overload::kReceiveBacklog, &now);
  CHECK(passed[0] == 6 * 3000);
  ClientLimitOptions off = ShedOnly();
  off.shed = false;
  ClientLimiter no_shedding(off);
  CHECK_FALSE(no_shedding.enabled());
  CHECK(no_shedding.memory_bytes() == 0);
}

}  // namespace
}  // namespace kdns::server

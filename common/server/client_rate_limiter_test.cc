#include "common/server/client_rate_limiter.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace kdns::server {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

loop::SocketAddress Client(const std::string& ip, uint16_t port = 40000) {
  return *loop::SocketAddress::FromHostPort(ip, port);
}

ClientRateOptions Limit(uint32_t rate, uint32_t burst, uint32_t slip) {
  ClientRateOptions options;
  options.rate = rate;
  options.burst = burst;
  options.slip = slip;
  return options;
}

// How many of `count` queries at `now` pass.
int Passed(ClientRateLimiter& limiter, const loop::SocketAddress& client, int count, uint64_t now) {
  int passed = 0;
  for (int i = 0; i < count; ++i) passed += limiter.Check(client, now) == RateVerdict::kPass;
  return passed;
}

TEST_CASE("a client gets its burst at once, then the rate", "[client_rate]") {
  ClientRateLimiter limiter(Limit(100, 20, 0));
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

TEST_CASE("the limit is per client, and a client is its prefix", "[client_rate]") {
  ClientRateOptions options = Limit(10, 0, 0);
  options.prefix_v4 = 24;
  ClientRateLimiter limiter(options);
  const uint64_t now = kSecond;
  CHECK(Passed(limiter, Client("10.0.0.1"), 10, now) == 10);
  CHECK(Passed(limiter, Client("10.0.0.200", 53), 5, now) == 0);  // the same /24
  CHECK(Passed(limiter, Client("10.0.1.1"), 10, now) == 10);
  CHECK(Passed(limiter, Client("2001:db8:0:1::1"), 10, now) == 10);
  CHECK(Passed(limiter, Client("2001:db8:0:1:ffff::2"), 5, now) == 0);  // the same /64
  CHECK(Passed(limiter, Client("2001:db8:0:2::1"), 10, now) == 10);
  CHECK(limiter.tracked() == 4);
}

TEST_CASE("every slip-th limited query is answered with TC", "[client_rate]") {
  ClientRateLimiter limiter(Limit(1, 1, 3));
  const auto client = Client("10.0.0.1");
  CHECK(limiter.Check(client, kSecond) == RateVerdict::kPass);
  std::vector<RateVerdict> verdicts;
  for (int i = 0; i < 6; ++i) verdicts.push_back(limiter.Check(client, kSecond));
  CHECK(verdicts == std::vector<RateVerdict>{RateVerdict::kDrop, RateVerdict::kDrop,
                                             RateVerdict::kSlip, RateVerdict::kDrop,
                                             RateVerdict::kDrop, RateVerdict::kSlip});
}

TEST_CASE("exempt prefixes and a zero rate are never limited", "[client_rate]") {
  ClientRateLimiter off(Limit(0, 0, 2));
  CHECK_FALSE(off.enabled());
  CHECK(Passed(off, Client("10.0.0.1"), 1000, kSecond) == 1000);
  CHECK(off.memory_bytes() == 0);
  ClientRateLimiter limiter(
      {.rate = 1,
       .slip = 0,
       .exempt = {*IpPrefix::Parse("10.96.0.0/12"), *IpPrefix::Parse("fd00::/8")}});
  CHECK(Passed(limiter, Client("10.96.0.10"), 1000, kSecond) == 1000);
  CHECK(Passed(limiter, Client("fd00::53"), 1000, kSecond) == 1000);
  CHECK(Passed(limiter, Client("10.112.0.1"), 1000, kSecond) == 1);
}

TEST_CASE("the table never grows, and idle clients make room first", "[client_rate]") {
  ClientRateOptions options = Limit(10, 10, 0);
  options.slots = 64;
  ClientRateLimiter limiter(options);
  CHECK(limiter.capacity() == 64);
  CHECK(limiter.memory_bytes() == 64 * 32);
  // Any sequence of clients and times stays within the table.
  std::mt19937_64 random(7);
  uint64_t now = kSecond;
  for (int i = 0; i < 100'000; ++i) {
    now += random() % 1'000'000;
    const std::string ip = "10." + std::to_string(random() % 4) + "." +
                           std::to_string(random() % 256) + "." + std::to_string(random() % 256);
    (void)limiter.Check(Client(ip), now);
    REQUIRE(limiter.tracked() <= limiter.capacity());
  }
  CHECK(limiter.tracked() == limiter.capacity());
  // A limited flooder keeps its state while a stream of one-off clients passes through:
  // the one-off clients' buckets are full (idle) and go first.
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

TEST_CASE("threads share the limit without losing or inventing tokens", "[client_rate]") {
  ClientRateLimiter limiter(Limit(1000, 1000, 0));
  const auto client = Client("10.0.0.1");
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] { passed += Passed(limiter, client, 5000, kSecond); });
  }
  for (auto& thread : threads) thread.join();
  CHECK(passed == 1000);
}

}  // namespace
}  // namespace kdns::server

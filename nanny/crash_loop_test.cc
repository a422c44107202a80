#include "nanny/crash_loop.h"

#include <catch2/catch.hpp>

namespace kdns::nanny {

TEST_CASE("the first crash restarts at once, the next ones back off, then the nanny gives up",
          "[nanny]") {
  CrashLoop loop(CrashLoop::Options{10'000, 5, 100, 5'000});
  uint64_t now = 1'000'000;
  auto crash_after = [&](uint64_t ran_ms) {
    const uint64_t started = now;
    now += ran_ms;
    return loop.OnUnexpectedExit(started, now);
  };
  auto d = crash_after(50);
  CHECK_FALSE(d.give_up);
  CHECK(d.delay_ms == 0);
  CHECK(d.fast_crashes == 1);
  CHECK(crash_after(50).delay_ms == 100);
  CHECK(crash_after(50).delay_ms == 200);
  CHECK(crash_after(50).delay_ms == 400);
  d = crash_after(50);
  CHECK(d.give_up);
  CHECK(d.fast_crashes == 5);
}

TEST_CASE("a child that ran long enough starts the count over", "[nanny]") {
  CrashLoop loop(CrashLoop::Options{10'000, 3, 100, 5'000});
  CHECK(loop.OnUnexpectedExit(0, 10).fast_crashes == 1);
  CHECK(loop.OnUnexpectedExit(10, 20).fast_crashes == 2);
  // A healthy run, then a crash: restarted at once, not counted.
  auto d = loop.OnUnexpectedExit(20, 20 + 10'000);
  CHECK_FALSE(d.give_up);
  CHECK(d.delay_ms == 0);
  CHECK(loop.fast_crashes() == 0);
  CHECK(loop.OnUnexpectedExit(20'000, 20'001).delay_ms == 0);
  CHECK(loop.OnUnexpectedExit(20'001, 20'002).delay_ms == 100);
  CHECK(loop.OnUnexpectedExit(20'002, 20'003).give_up);
}

TEST_CASE("the backoff is capped", "[nanny]") {
  CrashLoop loop(CrashLoop::Options{10'000, 100, 100, 1'000});
  uint64_t last = 0;
  for (int i = 0; i < 20; ++i) last = loop.OnUnexpectedExit(0, 1).delay_ms;
  CHECK(last == 1'000);
}

TEST_CASE("a limit of one gives up at the first fast crash", "[nanny]") {
  CrashLoop loop(CrashLoop::Options{10'000, 1, 100, 1'000});
  CHECK(loop.OnUnexpectedExit(0, 1).give_up);
}

}  // namespace kdns::nanny

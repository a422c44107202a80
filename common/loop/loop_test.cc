#include "common/loop/loop.h"

#include <catch2/catch.hpp>
#include <memory>

#include "common/loop/loop_test_util.h"
#include "common/loop/timer.h"

namespace kdns::loop {
namespace {

TEST_CASE("Loop closes clean when every owner is gone", "[loop]") {
  Loop loop;
  { Timer timer(loop); }
  testing::RequireClosesClean(loop);
  CHECK(loop.Close());  // idempotent
}

TEST_CASE("Loop refuses to close while a handle is open and names it", "[loop]") {
  Loop loop;
  auto timer = std::make_unique<Timer>(loop);
  CHECK_FALSE(loop.Close());
  auto names = loop.OpenHandleNames();
  REQUIRE(names.size() == 1);
  CHECK(names[0] == "timer");
  timer.reset();
  testing::RequireClosesClean(loop);
}

TEST_CASE("Loop time advances as it runs", "[loop]") {
  Loop loop;
  uint64_t start = loop.now_ms();
  Timer timer(loop);
  bool fired = false;
  timer.Start(5, [&] { fired = true; });
  REQUIRE(testing::RunUntil(loop, [&] { return fired; }));
  CHECK(loop.now_ms() >= start + 5);
}

TEST_CASE("Loop Stop makes Run return", "[loop]") {
  Loop loop;
  Timer timer(loop);
  int ticks = 0;
  timer.StartRepeating(1, [&] {
    if (++ticks == 3) loop.Stop();
  });
  loop.Run();
  CHECK(ticks == 3);
}

}  // namespace
}  // namespace kdns::loop

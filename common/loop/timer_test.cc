#include "common/loop/timer.h"

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "common/loop/loop_test_util.h"

namespace kdns::loop {
namespace {

TEST_CASE("Timers fire in the order of their timeouts", "[loop][timer]") {
  Loop loop;
  std::vector<int> order;
  {
    Timer t30(loop), t10(loop), t20(loop);
    t30.Start(30, [&] { order.push_back(30); });
    t10.Start(10, [&] { order.push_back(10); });
    t20.Start(20, [&] { order.push_back(20); });
    loop.Run();  // returns when no timer is active any more
  }
  CHECK(order == std::vector<int>{10, 20, 30});
  testing::RequireClosesClean(loop);
}

TEST_CASE("A repeating timer fires until stopped", "[loop][timer]") {
  Loop loop;
  int ticks = 0;
  {
    Timer timer(loop);
    timer.StartRepeating(1, [&] {
      if (++ticks == 5) timer.Stop();
    });
    loop.Run();
    CHECK_FALSE(timer.IsActive());
  }
  CHECK(ticks == 5);
  testing::RequireClosesClean(loop);
}

TEST_CASE("Restarting a timer pushes its deadline back", "[loop][timer]") {
  Loop loop;
  std::vector<char> order;
  {
    Timer a(loop), c(loop), pusher(loop);
    a.Start(20, [&] { order.push_back('a'); });  // would fire before c at 30 ms
    c.Start(30, [&] { order.push_back('c'); });
    pusher.Start(15, [&] {
      order.push_back('p');
      a.Restart();  // now fires 20 ms after ~15 ms, after c
    });
    loop.Run();
  }
  CHECK(order == std::vector<char>{'p', 'c', 'a'});
  testing::RequireClosesClean(loop);
}

TEST_CASE("A stopped timer does not fire", "[loop][timer]") {
  Loop loop;
  bool fired = false;
  {
    Timer timer(loop);
    timer.Start(1, [&] { fired = true; });
    CHECK(timer.IsActive());
    timer.Stop();
    loop.Run();
  }
  CHECK_FALSE(fired);
  testing::RequireClosesClean(loop);
}

TEST_CASE("A timer may destroy itself from its own callback", "[loop][timer]") {
  Loop loop;
  auto timer = std::make_unique<Timer>(loop);
  bool fired = false;
  timer->Start(1, [&] {
    fired = true;
    timer.reset();
  });
  loop.Run();
  CHECK(fired);
  CHECK(timer == nullptr);
  testing::RequireClosesClean(loop);
}

TEST_CASE("A throwing timer callback is contained", "[loop][timer]") {
  Loop loop;
  int calls = 0;
  {
    Timer timer(loop);
    timer.Start(0, [&] {
      ++calls;
      throw std::runtime_error("boom");
    });
    loop.Run();
  }
  CHECK(calls == 1);
  testing::RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::loop

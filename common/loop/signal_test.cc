#include "common/loop/signal.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include "common/loop/loop_test_util.h"

namespace kdns::loop {
namespace {

TEST_CASE("Signal delivers a raised signal on the loop thread", "[loop][signal]") {
  Loop loop;
  int received = 0;
  {
    Signal signal(loop);
    signal.Start(SIGUSR1, [&](int signum) { received = signum; });
    REQUIRE(raise(SIGUSR1) == 0);
    REQUIRE(testing::RunUntil(loop, [&] { return received != 0; }));
    signal.Stop();
  }
  CHECK(received == SIGUSR1);
  testing::RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::loop

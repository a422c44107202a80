#include "nanny/orphan_reaper.h"

#include <sys/prctl.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/loop/child_process.h"
#include "common/loop/loop_test_util.h"

namespace kdns::nanny {

TEST_CASE("orphans re-parented to the nanny are reaped, its own child is left to libuv",
          "[nanny][process]") {
  // As a subreaper this test process receives its grandchildren when their parent exits.
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  loop::Loop loop;
  {
    std::unique_ptr<loop::ChildProcess> child;
    pid_t child_pid = 0;
    OrphanReaper reaper(loop, [&](pid_t pid) { return pid == child_pid; });
    REQUIRE(reaper.Start());
    bool exited = false;
    std::string error;
    // The shell leaves three short-lived orphans behind and exits.
    loop::ChildProcess::Options options;
    options.argv = {"/bin/sh", "-c",
                    "(sleep 0.05 >/dev/null 2>&1 &); (sleep 0.05 >/dev/null 2>&1 &); "
                    "(sleep 0.05 >/dev/null 2>&1 &); exit 0"};
    child = loop::ChildProcess::Spawn(
        loop, options, nullptr, [&](int64_t, int) { exited = true; }, &error);
    REQUIRE(child != nullptr);
    child_pid = child->pid();
    REQUIRE(loop::testing::RunUntil(loop, [&] { return exited && reaper.reaped() == 3; }));
    reaper.Stop();
  }
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 0) == 0);
  loop::testing::RequireClosesClean(loop);
}

}  // namespace kdns::nanny

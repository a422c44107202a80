#include "nanny/config_watcher.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;
using Trigger = ConfigWatcher::Trigger;

// The kubelet's swap: a new timestamped directory, `..data` renamed over, the old one gone.
void Swap(const std::string& dir, const std::string& version, const std::string& old) {
  std::filesystem::create_directory(dir + "/" + version);
  std::ofstream(dir + "/" + version + "/stubDomains") << "{}";
  std::filesystem::create_symlink(version, dir + "/..data_tmp");
  std::filesystem::rename(dir + "/..data_tmp", dir + "/..data");
  if (!old.empty()) std::filesystem::remove_all(dir + "/" + old);
}

}  // namespace

TEST_CASE("a ..data swap is noticed at once, a burst of events makes one check", "[nanny]") {
  kdns::testing::TempDir dir;
  Swap(dir.path(), "..v1", "");
  loop::Loop loop;
  {
    std::vector<Trigger> checks;
    ConfigWatcher watcher(loop, {dir.path(), 600'000, 20},
                          [&](Trigger trigger) { checks.push_back(trigger); });
    watcher.Start();
    CHECK(watcher.watching());
    Swap(dir.path(), "..v2", "..v1");  // several inotify events
    REQUIRE(RunUntil(loop, [&] { return !checks.empty(); }));
    CHECK(checks == std::vector<Trigger>{Trigger::kInotify});
    // Nothing more arrives from that burst.
    bool extra = RunUntil(
        loop, [&] { return checks.size() > 1; }, 150);
    CHECK_FALSE(extra);
    std::ofstream(dir.File("upstreamNameservers")) << "[]";  // plain file edits count too
    REQUIRE(RunUntil(loop, [&] { return checks.size() == 2; }));
  }
  RequireClosesClean(loop);
}

TEST_CASE("the poll checks and arms the watch once the directory appears", "[nanny]") {
  kdns::testing::TempDir parent;
  const std::string dir = parent.File("config");
  loop::Loop loop;
  {
    std::vector<Trigger> checks;
    ConfigWatcher watcher(loop, {dir, 30, 5}, [&](Trigger trigger) { checks.push_back(trigger); });
    watcher.Start();
    CHECK_FALSE(watcher.watching());
    REQUIRE(RunUntil(loop, [&] { return !checks.empty(); }));
    CHECK(checks.front() == Trigger::kPoll);
    std::filesystem::create_directory(dir);
    REQUIRE(RunUntil(loop, [&] { return watcher.watching(); }));
    checks.clear();
    Swap(dir, "..v1", "");
    REQUIRE(RunUntil(loop, [&] {
      return std::find(checks.begin(), checks.end(), Trigger::kInotify) != checks.end();
    }));
    watcher.Stop();
  }
  RequireClosesClean(loop);
}

}  // namespace kdns::nanny

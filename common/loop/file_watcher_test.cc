#include "common/loop/file_watcher.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "test/unit/temp_dir.h"

namespace kdns::loop {
namespace {

using testing::RunUntil;
using Trigger = FileWatcher::Trigger;

// The kubelet's swap: a new timestamped directory, `..data` renamed over, the old one gone.
void Swap(const std::string& dir, const std::string& version, const std::string& old) {
  std::filesystem::create_directory(dir + "/" + version);
  std::ofstream(dir + "/" + version + "/stubDomains") << "{}";
  std::filesystem::create_symlink(version, dir + "/..data_tmp");
  std::filesystem::rename(dir + "/..data_tmp", dir + "/..data");
  if (!old.empty()) std::filesystem::remove_all(dir + "/" + old);
}

}  // namespace

TEST_CASE_METHOD(testing::LoopFixture,
                 "a ..data swap is noticed at once, a burst of events makes one check",
                 "[file_watcher]") {
  kdns::testing::TempDir dir;
  Swap(dir.path(), "..v1", "");
  std::vector<Trigger> checks;
  FileWatcher watcher(loop, {dir.path(), {}, FileWatcher::Mode::kInotify, 600'000, 20},
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

TEST_CASE_METHOD(testing::LoopFixture,
                 "the poll checks and arms the watch once the directory appears",
                 "[file_watcher]") {
  kdns::testing::TempDir parent;
  const std::string dir = parent.File("config");
  std::vector<Trigger> checks;
  FileWatcher watcher(loop, {dir, {}, FileWatcher::Mode::kInotify, 30, 5},
                      [&](Trigger trigger) { checks.push_back(trigger); });
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

TEST_CASE_METHOD(testing::LoopFixture, "Only events for the named entries and ..data count",
                 "[file_watcher]") {
  kdns::testing::TempDir dir;
  std::vector<Trigger> checks;
  FileWatcher watcher(loop, {dir.path(), {"objects.json"}, FileWatcher::Mode::kInotify, 600'000, 5},
                      [&](Trigger trigger) { checks.push_back(trigger); });
  watcher.Start();
  REQUIRE(watcher.watching());
  std::ofstream(dir.File("other.json")) << "{}";
  CHECK_FALSE(RunUntil(
      loop, [&] { return !checks.empty(); }, 100));
  std::ofstream(dir.File("objects.json")) << "{}";
  REQUIRE(RunUntil(loop, [&] { return checks.size() == 1; }));
  Swap(dir.path(), "..v1", "");
  REQUIRE(RunUntil(loop, [&] { return checks.size() == 2; }));
  CHECK(checks == std::vector<Trigger>{Trigger::kInotify, Trigger::kInotify});
}

TEST_CASE_METHOD(testing::LoopFixture, "In poll-only mode no watch is armed and the poll reports",
                 "[file_watcher]") {
  kdns::testing::TempDir dir;
  std::vector<Trigger> checks;
  FileWatcher watcher(loop, {dir.path(), {}, FileWatcher::Mode::kPollOnly, 10, 5},
                      [&](Trigger trigger) { checks.push_back(trigger); });
  watcher.Start();
  CHECK_FALSE(watcher.watching());
  REQUIRE(RunUntil(loop, [&] { return checks.size() >= 2; }));
  CHECK(std::count(checks.begin(), checks.end(), Trigger::kInotify) == 0);
  watcher.Stop();
}

}  // namespace kdns::loop

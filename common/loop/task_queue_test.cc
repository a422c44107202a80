#include "common/loop/task_queue.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "common/loop/loop_test_util.h"

namespace kdns::loop {
namespace {

TEST_CASE("TaskQueue runs tasks posted from other threads in order on the loop thread",
          "[loop][task_queue]") {
  Loop loop;
  constexpr int kThreads = 4;
  constexpr int kTasksPerThread = 1000;
  std::vector<std::vector<int>> seen(kThreads);
  int total = 0;
  const auto loop_thread = std::this_thread::get_id();
  bool wrong_thread = false;
  {
    TaskQueue queue(loop);
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t, poster = queue.poster()] {
        for (int i = 0; i < kTasksPerThread; ++i) {
          // Only the loop thread touches seen/total: the tasks run there.
          bool posted = poster.Post([&, t, i] {
            if (std::this_thread::get_id() != loop_thread) wrong_thread = true;
            seen[t].push_back(i);
            ++total;
          });
          if (!posted) return;
        }
      });
    }
    REQUIRE(testing::RunUntil(loop, [&] { return total == kThreads * kTasksPerThread; }));
    for (auto& thread : threads) thread.join();
  }
  CHECK_FALSE(wrong_thread);
  for (const auto& per_thread : seen) {
    REQUIRE(per_thread.size() == kTasksPerThread);
    for (int i = 0; i < kTasksPerThread; ++i) CHECK(per_thread[i] == i);
  }
  testing::RequireClosesClean(loop);
}

TEST_CASE("Posting after the TaskQueue is gone is refused, not a crash", "[loop][task_queue]") {
  Loop loop;
  TaskQueue::Poster poster;
  std::atomic<bool> ran{false};
  {
    TaskQueue queue(loop);
    poster = queue.poster();
    CHECK(poster.Post([&] { ran = true; }));  // queued, never run: the queue dies first
  }
  CHECK_FALSE(poster.Post([&] { ran = true; }));
  std::thread late([poster] { CHECK_FALSE(poster.Post([] {})); });
  late.join();
  testing::RequireClosesClean(loop);
  CHECK_FALSE(ran);
  CHECK_FALSE(TaskQueue::Poster().Post([] {}));
}

TEST_CASE("A task may destroy its TaskQueue; later tasks are dropped", "[loop][task_queue]") {
  Loop loop;
  auto queue = std::make_unique<TaskQueue>(loop);
  int ran = 0;
  REQUIRE(queue->Post([&] {
    ++ran;
    queue.reset();
  }));
  REQUIRE(queue->Post([&] { ++ran; }));
  REQUIRE(testing::RunUntil(loop, [&] { return queue == nullptr; }));
  CHECK(ran == 1);
  testing::RequireClosesClean(loop);
}

TEST_CASE("TaskQueue shuts down cleanly while other threads keep posting", "[loop][task_queue]") {
  Loop loop;
  std::atomic<bool> stop{false};
  std::atomic<int> refused{0};
  auto queue = std::make_unique<TaskQueue>(loop);
  int ran = 0;
  std::thread poster_thread([&, poster = queue->poster()] {
    while (!stop) {
      if (!poster.Post([&] { ++ran; })) ++refused;
    }
  });
  REQUIRE(testing::RunUntil(loop, [&] { return ran > 100; }));
  queue.reset();
  REQUIRE(testing::RunUntil(loop, [&] { return refused > 0; }));
  stop = true;
  poster_thread.join();
  testing::RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::loop

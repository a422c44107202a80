#include "common/base/atomic_budget.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace kdns {
namespace {

TEST_CASE("AtomicBudget takes up to its maximum and no further", "[atomic_budget]") {
  AtomicBudget budget(10);
  CHECK(budget.TryTake(4));
  CHECK(budget.TryTake(6));
  CHECK(budget.full());
  CHECK_FALSE(budget.TryTake());
  CHECK(budget.used() == 10);
  budget.Give(3);
  CHECK_FALSE(budget.TryTake(4));
  CHECK(budget.TryTake(3));
  CHECK_FALSE(budget.TryTake(SIZE_MAX));  // no overflow past the maximum
  AtomicBudget unbounded(AtomicBudget::kUnbounded);
  CHECK(unbounded.TryTake(SIZE_MAX / 2));
  CHECK_FALSE(unbounded.full());
  AtomicBudget none(0);
  CHECK_FALSE(none.TryTake());
  CHECK(none.full());
}

TEST_CASE("AtomicBudget is never over its maximum under threads", "[atomic_budget]") {
  AtomicBudget budget(100);
  std::atomic<size_t> over{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20'000; ++i) {
        if (!budget.TryTake()) continue;
        if (budget.used() > budget.max()) over.fetch_add(1);
        budget.Give();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(over == 0);
  CHECK(budget.used() == 0);
}

}  // namespace
}  // namespace kdns

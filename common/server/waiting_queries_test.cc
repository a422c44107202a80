#include "common/server/waiting_queries.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace kdns::server {
namespace {

TEST_CASE("the waiting budget gives out at most its max slots and takes them back",
          "[server][waiting]") {
  WaitingBudget budget(2);
  CHECK(budget.TryTake());
  CHECK(budget.TryTake());
  CHECK_FALSE(budget.TryTake());
  CHECK(budget.waiting() == 2);  // a refused take leaves nothing behind
  budget.Give();
  CHECK(budget.TryTake());
  budget.Give(2);
  CHECK(budget.waiting() == 0);
}

TEST_CASE("threads sharing the waiting budget never hold more than its max together",
          "[server][waiting]") {
  WaitingBudget budget(100);
  std::vector<std::thread> threads;
  std::vector<size_t> taken(4, 0);
  for (size_t t = 0; t < taken.size(); ++t) {
    threads.emplace_back([&budget, &taken, t] {
      for (int i = 0; i < 1000; ++i) {
        if (budget.TryTake()) ++taken[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  size_t total = 0;
  for (size_t count : taken) total += count;
  CHECK(total == 100);
  CHECK(budget.waiting() == 100);
}

}  // namespace
}  // namespace kdns::server

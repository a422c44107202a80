#include "common/upstream/forward_budgets.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

namespace kdns::upstream {
namespace {

loop::SocketAddress Address(const char* ip, uint16_t port = 53) {
  return *loop::SocketAddress::FromHostPort(ip, port);
}

TEST_CASE("A budget gives slots up to its maximum and takes each back once", "[upstream]") {
  InFlightBudget budget(2);
  BudgetHold first = budget.TryAcquire();
  BudgetHold second = budget.TryAcquire();
  CHECK(first);
  CHECK(second);
  CHECK(budget.full());
  BudgetHold refused = budget.TryAcquire();
  CHECK_FALSE(refused);
  CHECK(budget.in_flight() == 2);  // a refusal takes nothing

  first.Release();
  first.Release();  // once only
  CHECK(budget.in_flight() == 1);
  BudgetHold moved = std::move(second);
  CHECK_FALSE(second);  // NOLINT(bugprone-use-after-move): the moved-from hold is empty
  CHECK(budget.in_flight() == 1);
  {
    BudgetHold scoped = budget.TryAcquire();
    CHECK(budget.in_flight() == 2);
  }
  CHECK(budget.in_flight() == 1);  // given back by the destructor
  moved = BudgetHold();            // assignment gives back the slot it held
  CHECK(budget.in_flight() == 0);
}

TEST_CASE("Route and upstream budgets default to a quarter of the ceiling", "[upstream]") {
  SECTION("defaults") {
    ForwardBudgets budgets;
    CHECK(budgets.process().max() == ForwardBudgets::kDefaultMaxInFlight);
    CHECK(budgets.max_per_route() == ForwardBudgets::kDefaultMaxInFlight / 4);
    CHECK(budgets.max_per_upstream() == ForwardBudgets::kDefaultMaxInFlight / 4);
  }
  SECTION("a small ceiling still leaves each at least one") {
    ForwardBudgets budgets(ForwardBudgets::Limits{2, 0, 0});
    CHECK(budgets.max_per_route() == 1);
    CHECK(budgets.max_per_upstream() == 1);
  }
  SECTION("set explicitly") {
    ForwardBudgets budgets(ForwardBudgets::Limits{100, 30, 20});
    CHECK(budgets.Route(UpstreamSet{Address("192.0.2.1")}).max() == 30);
    CHECK(budgets.Upstream(Address("192.0.2.1")).max() == 20);
  }
}

TEST_CASE("A route is known by its server set, an upstream by its address", "[upstream]") {
  ForwardBudgets budgets(ForwardBudgets::Limits{100, 10, 10});
  const UpstreamSet kubedns{Address("127.0.0.1", 10053)};
  const UpstreamSet stub{Address("192.0.2.1"), Address("192.0.2.2")};
  InFlightBudget& first = budgets.Route(kubedns);
  CHECK(&budgets.Route(UpstreamSet{Address("127.0.0.1", 10053)}) == &first);
  CHECK(&budgets.Route(stub) != &first);
  // The same servers in another order are another preference, and another route.
  CHECK(&budgets.Route(UpstreamSet{Address("192.0.2.2"), Address("192.0.2.1")}) !=
        &budgets.Route(stub));
  CHECK(&budgets.Upstream(Address("192.0.2.1")) == &budgets.Upstream(Address("192.0.2.1")));
  CHECK(&budgets.Upstream(Address("192.0.2.1")) != &budgets.Upstream(Address("192.0.2.1", 54)));
  // Filling one route leaves the others whole.
  std::vector<BudgetHold> held;
  while (BudgetHold hold = first.TryAcquire()) held.push_back(std::move(hold));
  CHECK(held.size() == 10);
  CHECK(budgets.Route(stub).TryAcquire());
}

}  // namespace
}  // namespace kdns::upstream

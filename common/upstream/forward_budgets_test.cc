#include "common/upstream/forward_budgets.h"

#include <catch2/catch.hpp>
#include <string>
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

ClientTag Client(const char* ip, uint16_t port = 40000) { return ClientTagOf(Address(ip, port)); }

TEST_CASE("A client's tag is its address, not its port; an IPv6 client's is its /64",
          "[upstream][client_share]") {
  CHECK(Client("10.0.0.1", 1) == Client("10.0.0.1", 2));
  CHECK(Client("10.0.0.1") != Client("10.0.0.2"));
  CHECK(Client("fd00::1") == Client("fd00::ffff:1"));
  CHECK(Client("fd00::1") != Client("fd00:0:0:1::1"));
  // An IPv4 client seen on a dual-stack IPv6 socket is that IPv4 client.
  CHECK(Client("::ffff:10.0.0.1") == Client("10.0.0.1"));
  CHECK(Client("::ffff:10.0.0.1") != Client("::ffff:10.0.0.2"));
  CHECK(Client("10.0.0.1") != kNoClient);
  CHECK(ClientTagOf(loop::SocketAddress()) == kNoClient);
}

TEST_CASE("Past the reserve a client holding the average is refused, others are not",
          "[upstream][client_share]") {
  InFlightBudget budget(10, 2);  // the reserve: the last 2 slots
  REQUIRE(budget.reserve_slots() == 2);
  const ClientTag flooder = Client("127.0.0.2");
  const ClientTag victim = Client("127.0.0.1");
  std::vector<BudgetHold> flood;
  for (;;) {
    BudgetHold hold = budget.TryAcquire(flooder);
    if (!hold) {
      CHECK(hold.refusal() == Refusal::kClientShare);
      break;
    }
    flood.push_back(std::move(hold));
  }
  CHECK(flood.size() == 8);  // all but the reserve
  CHECK(budget.HeldBy(flooder) == 8);
  CHECK(budget.in_flight() == 8);  // a refusal takes nothing

  // The victim holds nothing, under any average: both reserve slots are its to take.
  BudgetHold first = budget.TryAcquire(victim);
  REQUIRE(first);
  CHECK(first.refusal() == Refusal::kNone);
  CHECK(budget.HeldBy(victim) == 1);
  CHECK(budget.TryAcquire(flooder).refusal() == Refusal::kClientShare);
  BudgetHold second = budget.TryAcquire(victim);  // 1 < 9 / 2
  REQUIRE(second);
  CHECK(budget.full());
  CHECK(budget.TryAcquire(victim).refusal() == Refusal::kFull);

  SECTION("release gives the slot and the client's count back") {
    first.Release();
    second.Release();
    CHECK(budget.HeldBy(victim) == 0);
    CHECK(budget.in_flight() == 8);
    CHECK(budget.TryAcquire(flooder).refusal() == Refusal::kClientShare);
    flood.pop_back();
    CHECK(budget.HeldBy(flooder) == 7);
    CHECK(budget.TryAcquire(flooder));  // below the reserve again (7 < 8)
  }
  SECTION("our own queries take any free slot") {
    second.Release();
    CHECK(budget.TryAcquire(kNoClient));
  }
}

TEST_CASE("The only client gets all but the reserve; a client with nothing always a free slot",
          "[upstream][client_share]") {
  SECTION("one slot, all of it reserve") {
    InFlightBudget budget(1, 1);
    BudgetHold hold = budget.TryAcquire(Client("10.0.0.1"));
    CHECK(hold);
    CHECK(budget.TryAcquire(Client("10.0.0.2")).refusal() == Refusal::kFull);
  }
  SECTION("without a reserve there are no shares") {
    InFlightBudget budget(3);
    std::vector<BudgetHold> held;
    while (BudgetHold hold = budget.TryAcquire(Client("10.0.0.1"))) held.push_back(std::move(hold));
    CHECK(held.size() == 3);
    CHECK(budget.HeldBy(Client("10.0.0.1")) == 0);  // not counted
  }
}

TEST_CASE("Many clients share the reserve as water fills: the heavy stop, the light go on",
          "[upstream][client_share]") {
  InFlightBudget budget(100, 20);
  // Four floods fill the first 80 slots, 20 each (any order of their queries would do).
  std::vector<BudgetHold> held;
  const ClientTag floods[] = {Client("10.0.1.1"), Client("10.0.1.2"), Client("10.0.1.3"),
                              Client("10.0.1.4")};
  for (int round = 0; round < 20; ++round) {
    for (ClientTag flood : floods) {
      BudgetHold hold = budget.TryAcquire(flood);
      REQUIRE(hold);
      held.push_back(std::move(hold));
    }
  }
  for (ClientTag flood : floods) CHECK(budget.TryAcquire(flood).refusal() == Refusal::kClientShare);
  // Forty light clients, each asking twice: the first of each finds a slot while the
  // reserve lasts (it holds nothing); a second while it holds less than the average.
  size_t light_slots = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string ip = "10.0.2." + std::to_string(i + 1);
    for (int ask = 0; ask < 2; ++ask) {
      BudgetHold hold = budget.TryAcquire(Client(ip.c_str()));
      if (!hold) break;
      ++light_slots;
      held.push_back(std::move(hold));
    }
  }
  CHECK(light_slots == 20);  // the whole reserve, and none of it to the floods
  CHECK(budget.full());
  // Never less (a light client sharing both of a flood's counters by chance adds to it).
  for (ClientTag flood : floods) CHECK(budget.HeldBy(flood) >= 20);
  held.clear();
  CHECK(budget.in_flight() == 0);
  for (ClientTag flood : floods) CHECK(budget.HeldBy(flood) == 0);
}

TEST_CASE("Route and upstream budgets keep the configured reserve", "[upstream][client_share]") {
  SECTION("a tenth by default, at least one slot") {
    ForwardBudgets budgets(ForwardBudgets::Limits{100, 50, 5});
    CHECK(budgets.client_reserve_percent() == ForwardBudgets::kDefaultClientReservePercent);
    CHECK(budgets.Route(UpstreamSet{Address("192.0.2.1")}).reserve_slots() == 5);
    CHECK(budgets.Upstream(Address("192.0.2.1")).reserve_slots() == 1);
    CHECK(budgets.process().reserve_slots() == 0);  // the ceiling has no shares
  }
  SECTION("0 turns shares off") {
    ForwardBudgets budgets(ForwardBudgets::Limits{100, 50, 5, 0});
    CHECK(budgets.Route(UpstreamSet{Address("192.0.2.1")}).reserve_slots() == 0);
    CHECK(budgets.Upstream(Address("192.0.2.1")).reserve_slots() == 0);
  }
}

}  // namespace
}  // namespace kdns::upstream

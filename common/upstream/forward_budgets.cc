#include "common/upstream/forward_budgets.h"

#include <algorithm>

namespace kdns::upstream {
namespace {

size_t ShareOf(size_t ceiling, size_t configured) {
  return configured != 0 ? configured : std::max<size_t>(1, ceiling / 4);
}

}  // namespace

BudgetHold InFlightBudget::TryAcquire() {
  if (!slots_.TryTake()) return BudgetHold();
  return BudgetHold(this);
}

ForwardBudgets::ForwardBudgets(const Limits& limits)
    : process_(limits.max_in_flight),
      max_per_route_(ShareOf(limits.max_in_flight, limits.max_per_route)),
      max_per_upstream_(ShareOf(limits.max_in_flight, limits.max_per_upstream)) {}

ForwardBudgets::ForwardBudgets() : ForwardBudgets(Limits()) {}

InFlightBudget& ForwardBudgets::Route(const UpstreamSet& upstreams) {
  std::lock_guard lock(mu_);
  auto& budget = routes_[upstreams];
  if (budget == nullptr) budget = std::make_unique<InFlightBudget>(max_per_route_);
  return *budget;
}

InFlightBudget& ForwardBudgets::Upstream(const loop::SocketAddress& address) {
  std::lock_guard lock(mu_);
  auto& budget = upstreams_[address];
  if (budget == nullptr) budget = std::make_unique<InFlightBudget>(max_per_upstream_);
  return *budget;
}

}  // namespace kdns::upstream

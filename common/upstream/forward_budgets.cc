#include "common/upstream/forward_budgets.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "common/base/hash.h"

namespace kdns::upstream {
namespace {

size_t ShareOf(size_t ceiling, size_t configured) {
  return configured != 0 ? configured : std::max<size_t>(1, ceiling / 4);
}

// The process's key for ClientTagOf, drawn once.
uint64_t TagKey() {
  static const uint64_t key = [] {
    std::random_device device;
    return (uint64_t{device()} << 32) | device();
  }();
  return key;
}

}  // namespace

ClientTag ClientTagOf(const loop::SocketAddress& client) {
  uint64_t high = 0;
  uint64_t low = 0;
  if (client.is_v4()) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(client.sockaddr_ptr());
    high = uint64_t{4} << 32 | in->sin_addr.s_addr;
  } else if (client.is_v6()) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(client.sockaddr_ptr());
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      // An IPv4 client on a dual-stack socket (one inherited without IPV6_V6ONLY): the same
      // client as over IPv4, and not one /64 with every other IPv4 client.
      uint32_t v4 = 0;
      std::memcpy(&v4, reinterpret_cast<const uint8_t*>(&in6->sin6_addr) + 12, sizeof(v4));
      high = uint64_t{4} << 32 | v4;
    } else {
      // The /64: a host is given one (SLAAC, and a pod's range), and picks within it at will.
      std::memcpy(&low, &in6->sin6_addr, sizeof(low));
      high = uint64_t{6} << 32;
    }
  } else {
    return kNoClient;
  }
  const ClientTag tag = Mix64(Mix64(high ^ TagKey()) ^ low);
  return tag == kNoClient ? 1 : tag;
}

void ClientShares::Add(ClientTag client) {
  if (first_[First(client)].fetch_add(1, std::memory_order_relaxed) == 0) {
    first_in_use_.fetch_add(1, std::memory_order_relaxed);
  }
  if (second_[Second(client)].fetch_add(1, std::memory_order_relaxed) == 0) {
    second_in_use_.fetch_add(1, std::memory_order_relaxed);
  }
}

void ClientShares::Remove(ClientTag client) {
  if (first_[First(client)].fetch_sub(1, std::memory_order_relaxed) == 1) {
    first_in_use_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (second_[Second(client)].fetch_sub(1, std::memory_order_relaxed) == 1) {
    second_in_use_.fetch_sub(1, std::memory_order_relaxed);
  }
}

size_t ClientShares::HeldBy(ClientTag client) const {
  return std::min(first_[First(client)].load(std::memory_order_relaxed),
                  second_[Second(client)].load(std::memory_order_relaxed));
}

size_t ClientShares::holders() const {
  // Two of 40 clients share a counter of a row more often than not; the larger count of the
  // two rows is short only when both rows have a shared counter.
  return static_cast<size_t>(std::max<int64_t>({1, first_in_use_.load(std::memory_order_relaxed),
                                                second_in_use_.load(std::memory_order_relaxed)}));
}

InFlightBudget::InFlightBudget(size_t max, size_t reserve_slots)
    : slots_(max),
      threshold_(max - std::min(max, reserve_slots)),
      shares_(reserve_slots != 0 ? std::make_unique<ClientShares>() : nullptr) {}

BudgetHold InFlightBudget::TryAcquire(ClientTag client) {
  const bool shared = shares_ != nullptr && client != kNoClient;
  if (shared) {
    const size_t used = slots_.used();
    if (used >= max()) return BudgetHold(Refusal::kFull);
    if (used >= threshold_ && !UnderShare(client, used)) return BudgetHold(Refusal::kClientShare);
  }
  if (!slots_.TryTake()) return BudgetHold(Refusal::kFull);
  if (!shared) return BudgetHold(this, kNoClient);
  shares_->Add(client);
  return BudgetHold(this, client);
}

size_t InFlightBudget::HeldBy(ClientTag client) const {
  return shares_ == nullptr || client == kNoClient ? 0 : shares_->HeldBy(client);
}

bool InFlightBudget::UnderShare(ClientTag client, size_t in_flight) const {
  const size_t held = shares_->HeldBy(client);
  // held < in_flight / holders, without rounding.
  return held == 0 || held * shares_->holders() < in_flight;
}

void InFlightBudget::Release(ClientTag client) {
  if (client != kNoClient) shares_->Remove(client);
  slots_.Give();
}

ForwardBudgets::ForwardBudgets(const Limits& limits)
    : process_(limits.max_in_flight),
      max_per_route_(ShareOf(limits.max_in_flight, limits.max_per_route)),
      max_per_upstream_(ShareOf(limits.max_in_flight, limits.max_per_upstream)),
      client_reserve_percent_(limits.client_reserve_percent) {}

ForwardBudgets::ForwardBudgets() : ForwardBudgets(Limits()) {}

std::unique_ptr<InFlightBudget> ForwardBudgets::Make(size_t max) const {
  const size_t reserve =
      client_reserve_percent_ == 0 ? 0 : std::max<size_t>(1, max * client_reserve_percent_ / 100);
  return std::make_unique<InFlightBudget>(max, reserve);
}

InFlightBudget& ForwardBudgets::Route(const UpstreamSet& upstreams) {
  std::lock_guard lock(mu_);
  auto& budget = routes_[upstreams];
  if (budget == nullptr) budget = Make(max_per_route_);
  return *budget;
}

InFlightBudget& ForwardBudgets::Upstream(const loop::SocketAddress& address) {
  std::lock_guard lock(mu_);
  auto& budget = upstreams_[address];
  if (budget == nullptr) budget = Make(max_per_upstream_);
  return *budget;
}

}  // namespace kdns::upstream

// ForwardBudgets: how many distinct upstream queries may be in flight (coalesced waiters do
// not count), so that a dead or slow upstream can only exhaust its own share (DESIGN §7).
// Three budgets, each an InFlightBudget (an atomic count and its maximum):
//
//   the process   Limits::max_in_flight: the ceiling over every route and thread, as
//                 dnsmasq's --dns-forward-max means it (kubedns: --forward-max). It bounds
//                 what queries in flight cost (a UDP socket and a few KiB each).
//   each route    Limits::max_per_route: the queries of one route (a stub domain, the
//                 default upstreams, the cluster zone) held from Resolve to the result.
//                 A route is known by its server set (UpstreamSet): domains served by the
//                 very same servers share a budget (in frontend-cache the cluster zone and
//                 the reverse zones, all sent to kubedns, are one route).
//   each upstream Limits::max_per_upstream: the queries that have sent at least one try to
//                 that server, held until the query ends (a try that timed out keeps
//                 listening for a late answer, so it keeps its slot).
//
// The route and upstream budgets default to a quarter of the ceiling: three routes (or
// upstreams) black-holed at once still leave the fourth its whole budget, and a healthy
// one can take a burst of a quarter of the ceiling (in-flight = rate x RTT: a cold cache
// facing 1,000 distinct misses at once to a kubedns answering in 1 ms needs 1,000 slots
// for 1 ms). A query over any budget fails at once (Forwarder: Outcome::kOverloaded); there
// is no queue. frontend-cache and kubedns make one ForwardBudgets at start-up and hand it
// to the Forwarder of every serving thread (Forwarder::Options::budgets), so the budgets
// are the same whatever the thread count.
//
// Budgets are created on first use and never removed (routes and upstreams come from the
// configuration, so they are few), so references stay valid for the object's lifetime.
//
// Thread-safe: counts are atomics taken without a lock; a mutex guards only the maps (the
// first sight of a route or an upstream). Forwarders keep the references they got.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/base/atomic_budget.h"
#include "common/loop/socket_address.h"
#include "common/upstream/upstream_set.h"

namespace kdns::upstream {

class BudgetHold;

// One in-flight budget: a count of slots taken and its maximum.
class InFlightBudget {
 public:
  explicit InFlightBudget(size_t max) : slots_(max) {}
  InFlightBudget(const InFlightBudget&) = delete;
  InFlightBudget& operator=(const InFlightBudget&) = delete;

  // A slot, released when the hold is released or destroyed; an empty hold (nothing
  // taken) at the maximum.
  [[nodiscard]] BudgetHold TryAcquire();
  bool full() const { return in_flight() >= max(); }

  size_t max() const { return slots_.max(); }
  size_t in_flight() const { return slots_.used(); }

 private:
  friend class BudgetHold;
  void Release() { slots_.Give(); }

  AtomicBudget slots_;
};

// One slot of one InFlightBudget, given back exactly once: by Release() or the destructor.
// Move-only; the budget must outlive it.
class BudgetHold {
 public:
  BudgetHold() = default;
  ~BudgetHold() { Release(); }
  BudgetHold(BudgetHold&& other) noexcept : budget_(other.budget_) { other.budget_ = nullptr; }
  BudgetHold& operator=(BudgetHold&& other) noexcept {
    if (this != &other) {
      Release();
      budget_ = other.budget_;
      other.budget_ = nullptr;
    }
    return *this;
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;

  explicit operator bool() const { return budget_ != nullptr; }
  void Release() {
    if (budget_ != nullptr) budget_->Release();
    budget_ = nullptr;
  }

 private:
  friend class InFlightBudget;
  explicit BudgetHold(InFlightBudget* budget) : budget_(budget) {}
  InFlightBudget* budget_ = nullptr;
};

class ForwardBudgets {
 public:
  struct Limits {
    // The ceiling: distinct upstream queries in flight in the whole process.
    size_t max_in_flight = kDefaultMaxInFlight;
    // Per route and per upstream; 0: a quarter of max_in_flight (at least 1).
    size_t max_per_route = 0;
    size_t max_per_upstream = 0;
  };
  // Each in-flight query holds a UDP socket and about 6 KiB (ours and the kernel's), so
  // 4096 cost at most about 24 MiB (docs/operators.md, "Limits"); a quarter, 1024, covers
  // a cold cache's burst of distinct misses to a healthy route.
  static constexpr size_t kDefaultMaxInFlight = 4096;

  ForwardBudgets();  // the defaults
  explicit ForwardBudgets(const Limits& limits);
  ForwardBudgets(const ForwardBudgets&) = delete;
  ForwardBudgets& operator=(const ForwardBudgets&) = delete;

  InFlightBudget& process() { return process_; }
  // The budget of the route served by `upstreams`, created on first use.
  InFlightBudget& Route(const UpstreamSet& upstreams);
  // The budget of one upstream server, created on first use.
  InFlightBudget& Upstream(const loop::SocketAddress& address);

  size_t max_per_route() const { return max_per_route_; }
  size_t max_per_upstream() const { return max_per_upstream_; }

 private:
  InFlightBudget process_;
  const size_t max_per_route_;
  const size_t max_per_upstream_;
  std::mutex mu_;
  std::unordered_map<UpstreamSet, std::unique_ptr<InFlightBudget>, UpstreamSetHash>
      routes_;  // Guarded by mu_.
  std::unordered_map<loop::SocketAddress, std::unique_ptr<InFlightBudget>>
      upstreams_;  // Guarded by mu_.
};

}  // namespace kdns::upstream

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
// for 1 ms). A query over any budget fails at once (Forwarder: ForwardOutcome::kOverloaded); there
// is no queue. frontend-cache and kubedns make one ForwardBudgets at start-up and hand it
// to the Forwarder of every serving thread (Forwarder::Options::budgets), so the budgets
// are the same whatever the thread count.
//
// Each client's fair share (issue 30): a route or upstream budget also counts the slots
// each client holds (ClientShares), and keeps its last Limits::client_reserve_percent for
// the clients holding less than the average: past that point a client that holds as much
// as the average client holding slots, or more, is refused (Refusal::kClientShare). So one
// pod asking for names a slow domain never answers, at a rate no rate limit minds (each
// such query holds its slot for the whole time budget), fills at most the part before the
// reserve, and every other client's misses on that route still find a slot; a client with
// nothing in flight always gets one while any is free. A route's only client (kubedns's,
// when the frontend-cache in front of it does not pass the pod's address on) gets all but
// the reserve. The process ceiling has no shares: it is what the route budgets divide.
//
// Budgets are created on first use and never removed (routes and upstreams come from the
// configuration, so they are few), so references stay valid for the object's lifetime.
//
// Thread-safe: counts are atomics taken without a lock; a mutex guards only the maps (the
// first sight of a route or an upstream). Forwarders keep the references they got.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/base/atomic_budget.h"
#include "common/loop/socket_address.h"
#include "common/upstream/upstream_set.h"

namespace kdns::upstream {

class BudgetHold;

// Who a slot is taken for, in the budgets' per-client counts: a hash of the client's address
// (an IPv6 client's /64, what one host is given; an IPv4-mapped one's IPv4 address; never the
// port), or kNoClient for our own queries (prefetches, probes), which take slots but have no
// share to keep.
using ClientTag = uint64_t;
inline constexpr ClientTag kNoClient = 0;
// The tag of `client`; kNoClient for an address that is neither IPv4 nor IPv6. Hashed with a
// random key of the process, so no client can pick an address that is counted with another's.
ClientTag ClientTagOf(const loop::SocketAddress& client);

// Why a budget gave an empty hold.
enum class Refusal : uint8_t {
  kNone,         // a slot was taken (or nothing was asked)
  kFull,         // every slot is taken
  kClientShare,  // only the reserve is left, and the client holds at least the average
};

// The slots each client holds in one budget, approximately and without a lock: two rows of
// kCounters counters, a client counted in one counter of each (from its tag). What it holds
// is the smaller of its two counts (a count-min sketch): a client is over-counted only if
// others share both its counters, which for any two clients is a chance of 1 in kCounters^2.
// Thread-safe: relaxed atomics.
class ClientShares {
 public:
  static constexpr size_t kCounters = 1024;

  ClientShares() = default;
  ClientShares(const ClientShares&) = delete;
  ClientShares& operator=(const ClientShares&) = delete;

  void Add(ClientTag client);
  void Remove(ClientTag client);
  size_t HeldBy(ClientTag client) const;
  // The clients holding slots: the counters in use of the row that has more (short only
  // when both rows have a counter shared by two clients). At least 1.
  size_t holders() const;

 private:
  static size_t First(ClientTag client) { return client % kCounters; }
  static size_t Second(ClientTag client) { return (client >> 32) % kCounters; }

  std::array<std::atomic<uint32_t>, kCounters> first_{};
  std::array<std::atomic<uint32_t>, kCounters> second_{};
  // The counters in use in each row. Signed: an Add and a Remove of one counter on two
  // threads may move it out of order.
  std::atomic<int64_t> first_in_use_{0};
  std::atomic<int64_t> second_in_use_{0};
};

// One in-flight budget: a count of slots taken and its maximum, and (with a reserve) what
// each client holds of it.
class InFlightBudget {
 public:
  // `reserve_slots`: the last slots, kept for clients holding less than the average (see the
  // header comment); 0: no shares.
  explicit InFlightBudget(size_t max, size_t reserve_slots = 0);
  InFlightBudget(const InFlightBudget&) = delete;
  InFlightBudget& operator=(const InFlightBudget&) = delete;

  // A slot for `client`, released when the hold is released or destroyed; an empty hold
  // (nothing taken; refusal() says why) at the maximum, or in the reserve for a client
  // holding its share. kNoClient is never refused a slot that is free.
  [[nodiscard]] BudgetHold TryAcquire(ClientTag client = kNoClient);
  bool full() const { return in_flight() >= max(); }

  size_t max() const { return slots_.max(); }
  size_t in_flight() const { return slots_.used(); }
  size_t reserve_slots() const { return shares_ == nullptr ? 0 : max() - threshold_; }
  // Slots `client` holds now (approximately: ClientShares); 0 without shares.
  size_t HeldBy(ClientTag client) const;

 private:
  friend class BudgetHold;
  // Whether `client` may take one of the reserve's slots: it holds less than the average of
  // the clients holding slots (`in_flight` of them in all).
  bool UnderShare(ClientTag client, size_t in_flight) const;
  void Release(ClientTag client);

  AtomicBudget slots_;
  const size_t threshold_;                      // where the reserve starts
  const std::unique_ptr<ClientShares> shares_;  // null without a reserve
};

// One slot of one InFlightBudget, given back exactly once: by Release() or the destructor.
// Move-only; the budget must outlive it. An empty hold says why it is empty (refusal()).
class BudgetHold {
 public:
  BudgetHold() = default;
  ~BudgetHold() { Release(); }
  BudgetHold(BudgetHold&& other) noexcept
      : budget_(other.budget_), client_(other.client_), refusal_(other.refusal_) {
    other.budget_ = nullptr;
  }
  BudgetHold& operator=(BudgetHold&& other) noexcept {
    if (this != &other) {
      Release();
      budget_ = other.budget_;
      client_ = other.client_;
      refusal_ = other.refusal_;
      other.budget_ = nullptr;
    }
    return *this;
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;

  explicit operator bool() const { return budget_ != nullptr; }
  // Why TryAcquire gave this hold empty; kNone for a hold that has (or had) a slot.
  Refusal refusal() const { return refusal_; }
  void Release() {
    if (budget_ != nullptr) budget_->Release(client_);
    budget_ = nullptr;
  }

 private:
  friend class InFlightBudget;
  BudgetHold(InFlightBudget* budget, ClientTag client) : budget_(budget), client_(client) {}
  explicit BudgetHold(Refusal refusal) : refusal_(refusal) {}
  InFlightBudget* budget_ = nullptr;
  ClientTag client_ = kNoClient;
  Refusal refusal_ = Refusal::kNone;
};

class ForwardBudgets {
 public:
  struct Limits {
    // The ceiling: distinct upstream queries in flight in the whole process.
    size_t max_in_flight = kDefaultMaxInFlight;
    // Per route and per upstream; 0: a quarter of max_in_flight (at least 1).
    size_t max_per_route = 0;
    size_t max_per_upstream = 0;
    // The share of each route and upstream budget (percent, at least one slot) kept for
    // clients holding less than the average; 0: no shares.
    size_t client_reserve_percent = kDefaultClientReservePercent;
  };
  // Each in-flight query holds a UDP socket and about 6 KiB (ours and the kernel's), so
  // 4096 cost at most about 24 MiB (docs/operators.md, "Limits"); a quarter, 1024, covers
  // a cold cache's burst of distinct misses to a healthy route.
  static constexpr size_t kDefaultMaxInFlight = 4096;
  // As the waiting-query budget's reserve (server::WaitingBudget::kReservePercent): a
  // tenth, 102 slots of a default route, is room for light clients' misses (100 queries a
  // second at 1 s each), and a flood still gets nine tenths.
  static constexpr size_t kDefaultClientReservePercent = 10;
  // --forward-client-reserve's bound: beyond half, a route's only client would get less
  // than the reserve it cannot use.
  static constexpr size_t kMaxClientReservePercent = 50;

  ForwardBudgets();  // the defaults
  explicit ForwardBudgets(const Limits& limits);
  ForwardBudgets(const ForwardBudgets&) = delete;
  ForwardBudgets& operator=(const ForwardBudgets&) = delete;

  InFlightBudget& process() { return process_; }
  // The budget of the route served by `upstreams`, created on first use.
  InFlightBudget& Route(const UpstreamSet& upstreams);
  // The budget of one upstream server, created on first use; one per address, shared by
  // the transports that ask it (10.0.0.10#53 and tcp://10.0.0.10#53): it guards the server.
  InFlightBudget& Upstream(const loop::SocketAddress& address);

  size_t max_per_route() const { return max_per_route_; }
  size_t max_per_upstream() const { return max_per_upstream_; }
  size_t client_reserve_percent() const { return client_reserve_percent_; }

 private:
  // A route's or upstream's budget of `max` slots, with its reserve.
  std::unique_ptr<InFlightBudget> Make(size_t max) const;

  InFlightBudget process_;
  const size_t max_per_route_;
  const size_t max_per_upstream_;
  const size_t client_reserve_percent_;
  std::mutex mu_;
  std::unordered_map<UpstreamSet, std::unique_ptr<InFlightBudget>, UpstreamSetHash>
      routes_;  // Guarded by mu_.
  std::unordered_map<loop::SocketAddress, std::unique_ptr<InFlightBudget>>
      upstreams_;  // Guarded by mu_.
};

}  // namespace kdns::upstream

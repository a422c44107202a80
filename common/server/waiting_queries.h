// Waiting queries: the queries a DNS server answers later, when an upstream has answered
// (DESIGN §7), kept the same way by both servers.
//
//   WaitingBudget         how many queries may wait at once in the whole process, over
//                         every serving thread and every reason to wait (a forwarded miss,
//                         a waiter coalesced on another's upstream query, an ExternalName
//                         chase). One per process, shared by the handlers of every thread.
//   WaitingQueries<State> one handler's waiting queries, by id: each keeps its Responder,
//                         the ClientQuery (only what its reply needs, forward_reply.h; never
//                         a copy of the packet), when it started (AnswerStart: its answer is
//                         timed and logged from it) and the handler's own State.
//
// Add takes the Request's Responder only if the budget has room (and, near full, if the
// client is not one of the heaviest: WaitingBudget::kReservePercent). Over it, the hit is
// recorded (limits::Limit::kWaitingQueries, with the client's address) and the Request is left
// pending: the handler answers it at once (frontend-cache: stale if cached, else SERVFAIL;
// kubedns: SERVFAIL). A query waits, so an upstream that never answers holds its slot for
// the forwarder's whole time budget; the budget, not the rate of queries, bounds the memory
// waiting queries take.
//
// A TCP client that closes its connection cannot get its answers: DropConnection (from
// QueryHandler::OnConnectionClosed) drops its waiting queries at once, releasing their
// slots, rather than keeping them until the upstream answers. The forwarder's callback for
// such a query then finds no entry, as it does for any id already taken. A TCP connection
// whose queries got no answer in time (QueryHandler::OnQueriesOverdue) has them taken with
// TakeConnection, for the handler to answer now as it answers an upstream's timeout.
//
// Storage: the queries live in slots that are reused (a deque, so a Waiting* stays valid
// while others are added, and a free list), not in nodes of a hash map: a forwarded miss
// allocates nothing once the slots have grown to the peak number waiting. An id names a
// slot and the slot's generation, so an id whose query is gone never finds the query that
// reuses its slot.
//
// Thread: a WaitingQueries lives on its handler's serving thread; the WaitingBudget is
// shared by all of them (relaxed atomics, no lock).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/base/atomic_budget.h"
#include "common/base/clock.h"
#include "common/limits/limits.h"
#include "common/server/forward_reply.h"
#include "common/server/query_handler.h"
#include "common/server/query_log.h"

namespace kdns::server {

class ClientLimiter;

class WaitingBudget {
 public:
  // --max-waiting-queries of frontend-cache and kubedns.
  static constexpr size_t kDefaultMax = 10'000;
  // With a ClientLimiter (KeepReserveFor), the last tenth of the budget is for light
  // clients: over 90% taken, a query from one of the heaviest clients does not wait. So a
  // flood of misses cannot take the slots a light client's next miss needs, even before
  // shedding (client_limiter.h) has caught up with it.
  static constexpr size_t kReservePercent = 10;

  enum class Take : uint8_t {
    kTaken,
    kFull,      // every slot taken
    kReserved,  // only the light clients' reserve is left, and the client is heavy
  };

  explicit WaitingBudget(size_t max_waiting = kDefaultMax) : slots_(max_waiting) {}
  WaitingBudget(const WaitingBudget&) = delete;
  WaitingBudget& operator=(const WaitingBudget&) = delete;

  // Takes one slot; false (nothing taken) when all max() are taken.
  [[nodiscard]] bool TryTake() { return slots_.TryTake(); }
  // Takes one slot for a query from `client` at `now_ns` (SteadyNowNs; see
  // kReservePercent).
  [[nodiscard]] Take TryTakeFor(const loop::SocketAddress& client, uint64_t now_ns);
  // Who tells light clients from heavy ones; set before serving.
  void KeepReserveFor(std::weak_ptr<ClientLimiter> limiter) { limiter_ = std::move(limiter); }
  // Gives back `count` slots taken with TryTake.
  void Give(size_t count = 1);

  size_t max() const { return slots_.max(); }
  size_t waiting() const { return slots_.used(); }

 private:
  AtomicBudget slots_;
  std::weak_ptr<ClientLimiter> limiter_;
};

template <class State>
class WaitingQueries {
 public:
  struct Waiting {
    Responder responder;
    ClientQuery client;
    AnswerStart start;
    State state;
  };

  // `budget` is shared with the other threads' handlers and outlives this.
  explicit WaitingQueries(std::shared_ptr<WaitingBudget> budget) : budget_(std::move(budget)) {}
  // The queries still waiting are dropped (their Responders drop), their slots given back.
  ~WaitingQueries() { budget_->Give(size_); }
  WaitingQueries(const WaitingQueries&) = delete;
  WaitingQueries& operator=(const WaitingQueries&) = delete;

  // Keeps `request`, given to its handler at `start`, waiting: takes its Responder and what
  // its reply needs, with `state` (moved from only then). Returns the id to find it again
  // (never 0), or 0 over the budget: the hit is recorded and `request` is left pending,
  // and `state` as it was, for the caller to answer now.
  uint64_t Add(Request& request, const AnswerStart& start, State& state) {
    switch (budget_->TryTakeFor(request.client(), SteadyNowNs())) {
      case WaitingBudget::Take::kTaken:
        break;
      case WaitingBudget::Take::kFull:
        limits::RecordLimitHit(limits::Limit::kWaitingQueries, request.client().ToString());
        return 0;
      case WaitingBudget::Take::kReserved:
        limits::RecordLimitHit(limits::Limit::kShedWaitingQueries);
        return 0;
    }
    uint32_t index = 0;
    if (free_.empty()) {
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    } else {
      index = free_.back();
      free_.pop_back();
    }
    Slot& slot = slots_[index];
    slot.waiting.emplace(Waiting{request.TakeResponder(), ClientQuery::From(request.admission()),
                                 start, std::move(state)});
    ++size_;
    const uint64_t id = IdOf(index, slot.generation);
    if (slot.waiting->responder.transport() == dns::Transport::kTcp) {
      by_connection_.emplace(slot.waiting->responder.connection_id(), id);
    }
    return id;
  }

  // The query waiting under `id`, or nullptr (answered, dropped, never added). Valid until
  // it is taken or dropped.
  Waiting* Find(uint64_t id) {
    Slot* slot = SlotOf(id);
    return slot == nullptr ? nullptr : &*slot->waiting;
  }

  // Removes the query waiting under `id` and gives back its slot: the caller answers it.
  std::optional<Waiting> Take(uint64_t id) {
    Slot* slot = SlotOf(id);
    if (slot == nullptr) return std::nullopt;
    std::optional<Waiting> waiting(std::move(slot->waiting));
    Free(id);
    budget_->Give();
    if (waiting->responder.transport() == dns::Transport::kTcp) {
      Unindex(waiting->responder.connection_id(), id);
    }
    return waiting;
  }

  // Removes every query waiting on TCP connection `connection_id` and gives back their
  // slots: the caller answers them (QueryHandler::OnQueriesOverdue). At most the
  // connection's outstanding queries.
  std::vector<Waiting> TakeConnection(uint64_t connection_id) {
    std::vector<uint64_t> ids;
    auto [first, last] = by_connection_.equal_range(connection_id);
    for (auto it = first; it != last; ++it) ids.push_back(it->second);
    std::vector<Waiting> taken;
    taken.reserve(ids.size());
    for (uint64_t id : ids) {
      if (std::optional<Waiting> waiting = Take(id)) taken.push_back(std::move(*waiting));
    }
    by_connection_.erase(connection_id);  // ids already gone, if any were left
    return taken;
  }

  // Drops every query waiting on TCP connection `connection_id` (its client closed it).
  // Returns how many.
  size_t DropConnection(uint64_t connection_id) {
    auto [first, last] = by_connection_.equal_range(connection_id);
    size_t dropped = 0;
    for (auto it = first; it != last; ++it) {
      if (SlotOf(it->second) == nullptr) continue;
      Free(it->second);
      ++dropped;
    }
    by_connection_.erase(first, last);
    budget_->Give(dropped);
    return dropped;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const WaitingBudget& budget() const { return *budget_; }

 private:
  struct Slot {
    uint32_t generation = 0;  // of the query in it, or of the next one
    std::optional<Waiting> waiting;
  };

  // The low 32 bits name the slot (index + 1, so never 0), the high ones its generation.
  static uint64_t IdOf(uint32_t index, uint32_t generation) {
    return uint64_t{generation} << 32 | (uint64_t{index} + 1);
  }

  // The slot a live id names, or nullptr.
  Slot* SlotOf(uint64_t id) {
    const uint64_t low = id & 0xffff'ffffU;
    if (low == 0 || low > slots_.size()) return nullptr;
    Slot& slot = slots_[low - 1];
    if (!slot.waiting.has_value() || slot.generation != static_cast<uint32_t>(id >> 32)) {
      return nullptr;
    }
    return &slot;
  }

  // Ends the query in the live id's slot (destroying what is left of it) and frees the slot.
  void Free(uint64_t id) {
    const auto index = static_cast<uint32_t>((id & 0xffff'ffffU) - 1);
    Slot& slot = slots_[index];
    slot.waiting.reset();
    ++slot.generation;
    free_.push_back(index);
    --size_;
  }

  void Unindex(uint64_t connection_id, uint64_t id) {
    auto [first, last] = by_connection_.equal_range(connection_id);
    for (auto it = first; it != last; ++it) {
      if (it->second == id) {
        by_connection_.erase(it);
        return;
      }
    }
  }

  std::shared_ptr<WaitingBudget> budget_;
  std::deque<Slot> slots_;
  std::vector<uint32_t> free_;  // indexes of empty slots
  size_t size_ = 0;             // queries waiting
  // TCP connection id -> the ids waiting on it (at most the connection's outstanding
  // queries, so the scans above are short).
  std::unordered_multimap<uint64_t, uint64_t> by_connection_;
};

}  // namespace kdns::server

// Process-wide bounds on what TCP clients can make us hold (DESIGN §7), shared by every
// serving thread of a program (all DnsServers of frontend-cache, kubedns's one):
//
//   TcpConnectionCaps  open connections in total and per source address. A connection
//                      holds a Slot from accept to close; the owner decides what to do at
//                      a cap (LoopServer closes one of its connections to make room rather
//                      than refuse the new one: at the total cap, PickEvictionVictim's
//                      choice, so that a few sources cannot hold the cap against the rest).
//                      Threads that accept from one shared socket may hold very different
//                      shares, so a thread with nothing of its own to close admits the
//                      newcomer over the cap (TryAcquireOver) and asks the other serving
//                      threads (AskForRoom) to close one for it; the next release anywhere
//                      covers the place lent.
//   OutputBudget       bytes of replies waiting in user space for clients that do not
//                      read, over all connections (TcpConnection charges what the kernel
//                      did not take at once and releases it when the write completes).
//
// Thread-safe. The total count and the output budget are lock-free atomics; the
// per-source counts sit in mutex-guarded shards touched only on accept and close, never on
// the query path; the serving threads' room makers, under a mutex, only at the cap.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

#include "common/base/atomic_budget.h"
#include "common/base/ip_address.h"
#include "common/loop/socket_address.h"

namespace kdns::loop {

class TcpConnectionCaps {
 public:
  enum class Verdict { kAdmitted, kOverTotal, kOverSource };

  // One admitted connection's place under the caps; released on destruction or Release().
  class Slot {
   public:
    Slot() = default;
    ~Slot() { Release(); }
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    void Release();
    bool held() const { return caps_ != nullptr; }

   private:
    friend class TcpConnectionCaps;
    TcpConnectionCaps* caps_ = nullptr;
    IpAddress source_;
  };

  // 0 for either: no cap of that kind.
  TcpConnectionCaps(size_t max_connections, size_t max_per_source);
  TcpConnectionCaps(const TcpConnectionCaps&) = delete;
  TcpConnectionCaps& operator=(const TcpConnectionCaps&) = delete;

  // Takes a slot for a connection from `source`, or says which cap is full.
  [[nodiscard]] Verdict TryAcquire(const IpAddress& source, Slot* slot);
  // Takes a slot for `source` beyond the total cap (never beyond the per-source one), while
  // fewer than `max_over` are lent so: a thread lends it while another closes a connection
  // for it. The next slot released anywhere goes to cover it instead of back under the cap.
  [[nodiscard]] bool TryAcquireOver(const IpAddress& source, size_t max_over, Slot* slot);

  // A serving thread's request to the others: close a connection for a newcomer whose source
  // holds `newcomer_source_connections` (PickEvictionVictim's rule), if one may be; `claim`
  // is shared by the threads asked, and only the one that sets it first closes one.
  struct RoomRequest {
    size_t newcomer_source_connections = 0;
    std::shared_ptr<std::atomic<bool>> claim;
  };
  // Called from the asking thread: must only hand the request to its own thread.
  using RoomMaker = std::function<void(const RoomRequest& request)>;
  // Each serving thread registers how to reach it; the id removes it (before it goes).
  [[nodiscard]] uint64_t AddRoomMaker(RoomMaker maker);
  void RemoveRoomMaker(uint64_t id);
  size_t room_makers() const;
  // Asks every registered thread but `except` to close one connection for the newcomer.
  void AskForRoom(uint64_t except, size_t newcomer_source_connections);

  // The most connections one source holds (walks every source: only at the cap).
  size_t max_from_one_source() const;

  size_t open() const { return open_.used() + over_.load(std::memory_order_relaxed); }
  size_t open_from(const IpAddress& source) const;
  size_t max_connections() const { return max_connections_; }
  size_t max_per_source() const { return max_per_source_; }

 private:
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<IpAddress, size_t, IpAddressHash> open;
  };
  Shard& ShardOf(const IpAddress& source) const;
  // Gives back one slot of `source`.
  void Release(const IpAddress& source);
  // Gives back one place under the total: to a place lent over the cap first, if any.
  void GiveBackTotal();

  // Counts one more connection from `source` unless its per-source cap is full.
  [[nodiscard]] bool TakeFromSource(const IpAddress& source);

  const size_t max_connections_;
  const size_t max_per_source_;
  AtomicBudget open_;            // max_connections_
  std::atomic<size_t> over_{0};  // slots lent beyond the cap (TryAcquireOver)
  mutable std::array<Shard, 16> shards_;
  mutable std::mutex room_mu_;
  std::map<uint64_t, RoomMaker> room_makers_;  // guarded by room_mu_
  uint64_t next_room_maker_ = 1;               // guarded by room_mu_
};

// One open connection that could be closed to make room for a newcomer at the total cap.
struct EvictionCandidate {
  size_t source_connections = 0;  // open connections of its source (TcpConnectionCaps)
  bool idle = false;              // no query outstanding
  // Smaller is older: for an idle one, when it became idle; for a busy one, when it opened.
  uint64_t order = 0;
};

// Which connection to close so that a newcomer whose source already holds
// `newcomer_source_connections` can take its place at the total cap, fair across sources:
// the heaviest source loses one (its connection idle longest, else its oldest busy one, whose
// queries are dropped), so a few clients holding every slot with queries that are never
// answered cannot lock the others out. A source lighter than the newcomer's never loses one,
// and a busy connection goes only to a source holding fewer by at least two (swapping equals
// would only churn). nullopt: refuse the newcomer. Pure; the caller walks its connections
// only at the cap.
std::optional<size_t> PickEvictionVictim(std::span<const EvictionCandidate> candidates,
                                         size_t newcomer_source_connections);

class OutputBudget {
 public:
  // 0: unbounded (only counted).
  explicit OutputBudget(size_t max_bytes)
      : bytes_(max_bytes == 0 ? AtomicBudget::kUnbounded : max_bytes) {}
  OutputBudget(const OutputBudget&) = delete;
  OutputBudget& operator=(const OutputBudget&) = delete;

  // Charges `bytes` if they fit under the bound; false (nothing charged) otherwise.
  [[nodiscard]] bool TryCharge(size_t bytes) { return bytes_.TryTake(bytes); }
  void Release(size_t bytes) { bytes_.Give(bytes); }

  size_t used() const { return bytes_.used(); }
  size_t max_bytes() const { return bytes_.max() == AtomicBudget::kUnbounded ? 0 : bytes_.max(); }

 private:
  AtomicBudget bytes_;
};

}  // namespace kdns::loop

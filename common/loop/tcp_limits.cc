#include "common/loop/tcp_limits.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace kdns::loop {

TcpConnectionCaps::Slot& TcpConnectionCaps::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    caps_ = std::exchange(other.caps_, nullptr);
    source_ = other.source_;
  }
  return *this;
}

void TcpConnectionCaps::Slot::Release() {
  if (caps_ == nullptr) return;
  std::exchange(caps_, nullptr)->Release(source_);
}

TcpConnectionCaps::TcpConnectionCaps(size_t max_connections, size_t max_per_source)
    : max_connections_(max_connections),
      max_per_source_(max_per_source),
      open_(max_connections == 0 ? AtomicBudget::kUnbounded : max_connections) {}

TcpConnectionCaps::Shard& TcpConnectionCaps::ShardOf(const IpAddress& source) const {
  return shards_[IpAddressHash()(source) % shards_.size()];
}

bool TcpConnectionCaps::TakeFromSource(const IpAddress& source) {
  Shard& shard = ShardOf(source);
  std::lock_guard lock(shard.mu);
  size_t& count = shard.open[source];
  if (max_per_source_ != 0 && count >= max_per_source_) return false;
  ++count;
  return true;
}

TcpConnectionCaps::Verdict TcpConnectionCaps::TryAcquire(const IpAddress& source, Slot* slot) {
  if (!open_.TryTake()) return Verdict::kOverTotal;
  if (!TakeFromSource(source)) {
    open_.Give();
    return Verdict::kOverSource;
  }
  *slot = Slot();
  slot->caps_ = this;
  slot->source_ = source;
  return Verdict::kAdmitted;
}

bool TcpConnectionCaps::TryAcquireOver(const IpAddress& source, size_t max_over, Slot* slot) {
  size_t over = over_.load(std::memory_order_relaxed);
  do {
    if (over >= max_over) return false;
  } while (!over_.compare_exchange_weak(over, over + 1, std::memory_order_relaxed));
  if (!TakeFromSource(source)) {
    GiveBackTotal();
    return false;
  }
  *slot = Slot();
  slot->caps_ = this;
  slot->source_ = source;
  return true;
}

void TcpConnectionCaps::Release(const IpAddress& source) {
  {
    Shard& shard = ShardOf(source);
    std::lock_guard lock(shard.mu);
    auto it = shard.open.find(source);
    if (it != shard.open.end() && --it->second == 0) shard.open.erase(it);
  }
  GiveBackTotal();
}

void TcpConnectionCaps::GiveBackTotal() {
  // A place lent beyond the cap is covered first: the total comes back under the cap.
  size_t over = over_.load(std::memory_order_relaxed);
  while (over > 0) {
    if (over_.compare_exchange_weak(over, over - 1, std::memory_order_relaxed)) return;
  }
  open_.Give();
}

uint64_t TcpConnectionCaps::AddRoomMaker(RoomMaker maker) {
  std::lock_guard lock(room_mu_);
  const uint64_t id = next_room_maker_++;
  room_makers_.emplace(id, std::move(maker));
  return id;
}

void TcpConnectionCaps::RemoveRoomMaker(uint64_t id) {
  std::lock_guard lock(room_mu_);
  room_makers_.erase(id);
}

size_t TcpConnectionCaps::room_makers() const {
  std::lock_guard lock(room_mu_);
  return room_makers_.size();
}

void TcpConnectionCaps::AskForRoom(uint64_t except, size_t newcomer_source_connections) {
  std::vector<RoomMaker> makers;
  {
    std::lock_guard lock(room_mu_);
    for (const auto& [id, maker] : room_makers_) {
      if (id != except) makers.push_back(maker);
    }
  }
  const RoomRequest request{newcomer_source_connections, std::make_shared<std::atomic<bool>>()};
  for (const RoomMaker& maker : makers) maker(request);
}

size_t TcpConnectionCaps::max_from_one_source() const {
  size_t most = 0;
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    for (const auto& [source, count] : shard.open) most = std::max(most, count);
  }
  return most;
}

std::optional<size_t> PickEvictionVictim(std::span<const EvictionCandidate> candidates,
                                         size_t newcomer_source_connections) {
  auto eligible = [newcomer_source_connections](const EvictionCandidate& c) {
    return c.idle ? c.source_connections >= newcomer_source_connections
                  : c.source_connections >= newcomer_source_connections + 2;
  };
  // Heaviest source first; of equals, idle before busy; then the oldest.
  auto before = [](const EvictionCandidate& a, const EvictionCandidate& b) {
    if (a.source_connections != b.source_connections) {
      return a.source_connections > b.source_connections;
    }
    if (a.idle != b.idle) return a.idle;
    return a.order < b.order;
  };
  std::optional<size_t> victim;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (eligible(candidates[i]) && (!victim || before(candidates[i], candidates[*victim]))) {
      victim = i;
    }
  }
  return victim;
}

size_t TcpConnectionCaps::open_from(const IpAddress& source) const {
  Shard& shard = ShardOf(source);
  std::lock_guard lock(shard.mu);
  auto it = shard.open.find(source);
  return it == shard.open.end() ? 0 : it->second;
}

}  // namespace kdns::loop

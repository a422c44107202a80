// Process-wide bounds on what TCP clients can make us hold (DESIGN §7), shared by every
// serving thread of a program (all DnsServers of frontend-cache, kubedns's one):
//
//   TcpConnectionCaps  open connections in total and per source address. A connection
//                      holds a Slot from accept to close; the owner decides what to do at
//                      a cap (LoopServer closes its oldest idle connection to make room
//                      rather than refuse the new one).
//   OutputBudget       bytes of replies waiting in user space for clients that do not
//                      read, over all connections (TcpConnection charges what the kernel
//                      did not take at once and releases it when the write completes).
//
// Thread-safe. The total count and the output budget are lock-free atomics; the
// per-source counts sit in mutex-guarded shards touched only on accept and close, never on
// the query path.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "common/base/atomic_budget.h"
#include "common/base/ip_address.h"
#include "common/loop/socket_address.h"

namespace kdns::loop {

// The IP address of an AF_INET/AF_INET6 socket address (v4-mapped IPv6 is kept as IPv6:
// the kernel reports a dual-stack listener's IPv4 peers that way, consistently).
IpAddress IpOf(const SocketAddress& address);
// Its inverse: `address` and `port` as a socket address (no text round trip).
SocketAddress SocketAddressOf(const IpAddress& address, uint16_t port);

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

  size_t open() const { return open_.used(); }
  size_t open_from(const IpAddress& source) const;
  size_t max_connections() const { return max_connections_; }
  size_t max_per_source() const { return max_per_source_; }

 private:
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<IpAddress, size_t, IpAddressHash> open;
  };
  Shard& ShardOf(const IpAddress& source) const;
  void Release(const IpAddress& source);

  const size_t max_connections_;
  const size_t max_per_source_;
  AtomicBudget open_;  // max_connections_
  mutable std::array<Shard, 16> shards_;
};

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

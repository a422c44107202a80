// ClientRateLimiter: the per-client response rate limit of both DNS servers (issue 16,
// DESIGN §7). A client is an address prefix (/32 for IPv4 and /64 for IPv6 by default: in a
// cluster a /24 is a whole node's pods); each gets a token bucket of `rate` responses per
// second and `burst` at once, kept as GCRA's one number (the theoretical arrival time,
// TAT): a response is allowed while TAT is at most `burst - 1` emission intervals ahead of
// now, and each allowed one moves TAT one interval on. Over the limit a query is dropped,
// except every `slip`-th one, which is answered with TC so that a real resolver retries
// over TCP (as BIND's RRL does; TCP is bounded by the connection caps instead).
//
// The table is fixed at construction (`slots`, a power of two, 32 bytes each): a client
// lives in one of kProbe slots from its hash; a new client takes an empty one, else the
// most idle of them (the smallest TAT: its bucket has been full the longest, so nothing is
// lost), so memory never grows with the number of clients and nothing is allocated per
// query. A flood of spoofed sources can only push clients out into a fresh, full bucket.
//
// Thread-safe without a lock: every serving thread and receiver thread of a server shares
// one limiter, and a check is a few relaxed loads and one compare-and-swap on the client's
// slot (threads only contend when they serve the same client). Races between two threads
// claiming a slot for different clients at once cost at most a reset bucket.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/base/ip_prefix.h"
#include "common/loop/socket_address.h"

namespace kdns::server {

enum class RateVerdict : uint8_t {
  kPass,  // within the limit (or exempt, or the limiter is off)
  kDrop,  // over the limit: send nothing
  kSlip,  // over the limit, but answer with TC (empty, header and question only)
};

struct ClientRateOptions {
  uint32_t rate = 0;   // responses per second per client; 0: off
  uint32_t burst = 0;  // responses at once; 0: the same as `rate`
  uint8_t prefix_v4 = 32;
  uint8_t prefix_v6 = 64;
  uint32_t slip = 2;  // every slip-th limited query gets TC; 0: never
  std::vector<IpPrefix> exempt;
  size_t slots = 1 << 16;  // rounded up to a power of two, at least kProbe
};

class ClientRateLimiter {
 public:
  // Slots a client may live in, from its hash.
  static constexpr size_t kProbe = 8;

  explicit ClientRateLimiter(const ClientRateOptions& options);
  ClientRateLimiter(const ClientRateLimiter&) = delete;
  ClientRateLimiter& operator=(const ClientRateLimiter&) = delete;

  bool enabled() const { return emission_ns_ != 0; }

  // Charges one response to `client` at `now_ns` (a steady clock in nanoseconds).
  RateVerdict Check(const loop::SocketAddress& client, uint64_t now_ns);

  // Slots holding a client now (never more than capacity()).
  size_t tracked() const { return tracked_.load(std::memory_order_relaxed); }
  size_t capacity() const { return slots_.size(); }
  // Clients pushed out of their slot by another while still limited or busy.
  uint64_t busy_evictions() const { return busy_evictions_.load(std::memory_order_relaxed); }
  size_t memory_bytes() const { return slots_.size() * sizeof(Slot); }

 private:
  struct alignas(32) Slot {
    std::atomic<uint64_t> tag{0};  // 0: empty
    std::atomic<uint64_t> tat_ns{0};
    std::atomic<uint32_t> limited{0};  // limited queries, for the slip
  };

  uint64_t Tag(const loop::SocketAddress& client) const;
  bool Exempt(const loop::SocketAddress& client) const;
  Slot& Find(uint64_t tag, uint64_t now_ns);

  const uint64_t emission_ns_;   // 1 s / rate; 0 when off
  const uint64_t tolerance_ns_;  // (burst - 1) emission intervals
  const uint8_t prefix_v4_;
  const uint8_t prefix_v6_;
  const uint32_t slip_;
  const std::vector<IpPrefix> exempt_;
  std::vector<Slot> slots_;
  std::atomic<size_t> tracked_{0};
  std::atomic<uint64_t> busy_evictions_{0};
};

}  // namespace kdns::server

// RateTable: the fixed-size table of token buckets behind both rate limits of the DNS
// servers (DESIGN §7): the per-client limit and shedding (ClientLimiter) and the limit of
// identical responses (ResponseRateLimiter). A key is a 64-bit tag (a hash; 0 is never a
// tag); its bucket is GCRA's one number, the theoretical arrival time (TAT): a charge is
// allowed while TAT is at most `tolerance` ahead of now, and moves TAT one emission
// interval on. Each slot also counts what arrived in the current and the previous window
// (2^kWindowShift ns, about 268 ms), which is the key's recent rate, and when it was last
// seen.
//
// The table never grows: a key lives in one of kProbe slots from its tag. A new key takes
// an empty one, else the one seen longest ago (the least recent window, then the smallest
// TAT), so a flood of new keys (spoofed sources, random names) only pushes out idle keys,
// whose buckets were full anyway; nothing is allocated after construction.
//
// Thread-safe without a lock: every serving thread shares one table, and a charge is a few
// relaxed loads and two compare-and-swaps on the key's own cache line (threads contend only
// on the same key). Two threads claiming one slot for different keys at once cost at most a
// reset bucket. Slots are 64 bytes, one cache line each, so two busy keys never share one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/base/zeroed_array.h"

namespace kdns::server {

class RateTable {
 public:
  // Slots a key may live in, from its tag.
  static constexpr size_t kProbe = 8;
  // Recent-rate windows are 2^28 ns (268 ms).
  static constexpr int kWindowShift = 28;
  static constexpr uint64_t kWindowNs = uint64_t{1} << kWindowShift;
  // Arrivals counted per window saturate here.
  static constexpr uint32_t kMaxCount = (1u << 24) - 1;

  struct alignas(64) Slot {
    std::atomic<uint64_t> tag{0};  // 0: empty
    std::atomic<uint64_t> tat_ns{0};
    // Arrivals: [window number mod 2^16 : 16][previous window : 24][current window : 24].
    std::atomic<uint64_t> window{0};
    std::atomic<uint32_t> limited{0};   // charges refused since the key took the slot
    std::atomic<uint32_t> meta{0};      // the owner's (ClientLimiter: family and prefix)
    std::atomic<uint64_t> key_high{0};  // the owner's, for display (ClientLimiter: address)
    std::atomic<uint64_t> key_low{0};
  };

  // What one arrival saw of its key's recent rate.
  struct Arrivals {
    uint32_t current = 0;   // in this window, this one included
    uint32_t previous = 0;  // in the window before (0 if the key was idle then)
  };

  // `slots` is rounded up to a power of two, at least kProbe; 0 makes an empty table that
  // must not be used.
  explicit RateTable(size_t slots);
  RateTable(const RateTable&) = delete;
  RateTable& operator=(const RateTable&) = delete;

  // The slot of `tag` (taken now if the key is new; *claimed says so).
  Slot& Find(uint64_t tag, uint64_t now_ns, bool* claimed);
  // The slot of `tag` if the key has one, else nullptr; takes nothing.
  const Slot* Lookup(uint64_t tag) const;
  // Counts one arrival at `now_ns` in the slot's windows.
  static Arrivals Arrive(Slot& slot, uint64_t now_ns);
  // The slot's recent rate at `now_ns`: arrivals per window, the larger of the current
  // and the previous one (0 when idle for two windows).
  static uint32_t RecentRate(const Slot& slot, uint64_t now_ns);
  // Charges one token: true while the bucket holds one (see the header comment).
  static bool Charge(Slot& slot, uint64_t now_ns, uint64_t emission_ns, uint64_t tolerance_ns);

  size_t tracked() const { return tracked_.load(std::memory_order_relaxed); }
  size_t capacity() const { return slots_.size(); }
  // Keys pushed out of their slot while their bucket was not yet full again.
  uint64_t busy_evictions() const { return busy_evictions_.load(std::memory_order_relaxed); }
  size_t memory_bytes() const { return slots_.size() * sizeof(Slot); }
  std::span<const Slot> slots() const { return slots_.items(); }

  static uint64_t WindowOf(uint64_t now_ns) { return now_ns >> kWindowShift; }

 private:
  // Pages of slots no key has reached cost no RSS (a quiet cluster touches few of them).
  ZeroedArray<Slot> slots_;
  std::atomic<size_t> tracked_{0};
  std::atomic<uint64_t> busy_evictions_{0};
};

// A tag from a key: Mix64 (common/base/hash.h), never 0.
uint64_t MixTag(uint64_t x);

}  // namespace kdns::server

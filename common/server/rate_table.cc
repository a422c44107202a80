#include "common/server/rate_table.h"

#include <algorithm>
#include <bit>

#include "common/base/hash.h"

namespace kdns::server {
namespace {

constexpr uint64_t kCountMask = RateTable::kMaxCount;

struct Window {
  uint64_t number;  // mod 2^16
  uint32_t previous;
  uint32_t current;
};

Window Unpack(uint64_t packed) {
  return {packed >> 48, static_cast<uint32_t>((packed >> 24) & kCountMask),
          static_cast<uint32_t>(packed & kCountMask)};
}

uint64_t Pack(const Window& w) {
  return ((w.number & 0xffff) << 48) | (uint64_t{w.previous} << 24) | w.current;
}

// Windows from `then` (mod 2^16) to `now`. A `then` ahead of `now` (another thread's
// clock read a moment later) is now.
uint64_t WindowsSince(uint64_t then, uint64_t now) {
  const uint64_t since = (now - then) & 0xffff;
  return since >= 0x8000 ? 0 : since;
}

}  // namespace

uint64_t MixTag(uint64_t x) {
  x = Mix64(x);
  return x == 0 ? 1 : x;
}

RateTable::RateTable(size_t slots)
    : slots_(slots == 0 ? 0 : std::bit_ceil(std::max(slots, kProbe))) {}

RateTable::Slot& RateTable::Find(uint64_t tag, uint64_t now_ns, bool* claimed) {
  *claimed = false;
  const size_t mask = slots_.size() - 1;
  const size_t first = static_cast<size_t>(tag) & mask;
  const uint64_t now_window = WindowOf(now_ns);
  Slot* victim = nullptr;
  uint64_t victim_idle = 0;  // windows since last seen; empty slots are the most idle
  uint64_t victim_tat = 0;
  uint64_t victim_held = 0;  // its tag when we looked: the claim below expects it still
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& slot = slots_[(first + i) & mask];
    const uint64_t held = slot.tag.load(std::memory_order_relaxed);
    if (held == tag) return slot;
    uint64_t idle = UINT64_MAX;
    uint64_t tat = 0;
    if (held != 0) {
      idle = WindowsSince(Unpack(slot.window.load(std::memory_order_relaxed)).number, now_window);
      tat = slot.tat_ns.load(std::memory_order_relaxed);
    }
    if (victim == nullptr || idle > victim_idle || (idle == victim_idle && tat < victim_tat)) {
      victim = &slot;
      victim_idle = idle;
      victim_tat = tat;
      victim_held = held;
    }
  }
  uint64_t old = victim_held;
  // The bucket and windows as they were before the claim: they are reset below only if
  // nobody has changed them since, because once the tag is ours another thread may find the
  // slot and charge this key before the reset, and a plain store would wipe its charges
  // (inventing tokens).
  uint64_t tat_before = victim->tat_ns.load(std::memory_order_relaxed);
  uint64_t window_before = victim->window.load(std::memory_order_relaxed);
  if (!victim->tag.compare_exchange_strong(old, tag, std::memory_order_relaxed)) {
    // Another thread claimed it since we looked (for this key, most likely): use it as it
    // is. (Expecting the tag seen in the scan, not a fresh read, is what keeps a second
    // thread from "claiming" the slot this key already took and resetting its bucket.)
    return *victim;
  }
  *claimed = true;
  if (old == 0) {
    tracked_.fetch_add(1, std::memory_order_relaxed);
  } else if (victim_tat > now_ns) {
    busy_evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  victim->tat_ns.compare_exchange_strong(tat_before, now_ns, std::memory_order_relaxed);
  victim->window.compare_exchange_strong(window_before, Pack({now_window, 0, 0}),
                                         std::memory_order_relaxed);
  victim->limited.store(0, std::memory_order_relaxed);
  return *victim;
}

const RateTable::Slot* RateTable::Lookup(uint64_t tag) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = 0; i < kProbe; ++i) {
    const Slot& slot = slots_[(static_cast<size_t>(tag) + i) & mask];
    if (slot.tag.load(std::memory_order_relaxed) == tag) return &slot;
  }
  return nullptr;
}

RateTable::Arrivals RateTable::Arrive(Slot& slot, uint64_t now_ns) {
  const uint64_t now_window = WindowOf(now_ns);
  uint64_t packed = slot.window.load(std::memory_order_relaxed);
  while (true) {
    Window w = Unpack(packed);
    const uint64_t since = WindowsSince(w.number, now_window);
    if (since == 1) {
      w.previous = w.current;
      w.current = 0;
    } else if (since != 0) {
      w.previous = 0;
      w.current = 0;
    }
    w.number = now_window;
    if (w.current < kMaxCount) ++w.current;
    if (slot.window.compare_exchange_weak(packed, Pack(w), std::memory_order_relaxed)) {
      return {w.current, w.previous};
    }
  }
}

uint32_t RateTable::RecentRate(const Slot& slot, uint64_t now_ns) {
  const Window w = Unpack(slot.window.load(std::memory_order_relaxed));
  const uint64_t since = WindowsSince(w.number, WindowOf(now_ns));
  if (since == 0) return std::max(w.current, w.previous);
  if (since == 1) return w.current;
  return 0;
}

bool RateTable::Charge(Slot& slot, uint64_t now_ns, uint64_t emission_ns, uint64_t tolerance_ns) {
  uint64_t tat = slot.tat_ns.load(std::memory_order_relaxed);
  while (tat <= now_ns + tolerance_ns) {
    const uint64_t next = std::max(tat, now_ns) + emission_ns;
    if (slot.tat_ns.compare_exchange_weak(tat, next, std::memory_order_relaxed)) return true;
  }
  slot.limited.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace kdns::server

#include "common/server/client_rate_limiter.h"

#include <netinet/in.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace kdns::server {
namespace {

// splitmix64's finalizer: spreads prefixes that differ in a few bits over the whole table.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The first `bits` bits of an 8-byte big-endian word.
uint64_t Keep(uint64_t word, int bits) {
  if (bits <= 0) return 0;
  if (bits >= 64) return word;
  return word & ~(~uint64_t{0} >> bits);
}

uint64_t BigEndian64(const uint8_t* bytes) {
  uint64_t word = 0;
  for (int i = 0; i < 8; ++i) word = (word << 8) | bytes[i];
  return word;
}

std::optional<IpAddress> IpOf(const loop::SocketAddress& address) {
  if (address.is_v4()) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address.sockaddr_ptr());
    return IpAddress::FromBytes(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&in->sin_addr), 4));
  }
  if (address.is_v6()) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address.sockaddr_ptr());
    return IpAddress::FromBytes(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&in6->sin6_addr), 16));
  }
  return std::nullopt;
}

}  // namespace

ClientRateLimiter::ClientRateLimiter(const ClientRateOptions& options)
    : emission_ns_(options.rate == 0 ? 0 : std::max<uint64_t>(1, 1'000'000'000ull / options.rate)),
      tolerance_ns_(emission_ns_ *
                    (std::max(options.burst == 0 ? options.rate : options.burst, uint32_t{1}) - 1)),
      prefix_v4_(std::min<uint8_t>(options.prefix_v4, 32)),
      prefix_v6_(std::min<uint8_t>(options.prefix_v6, 128)),
      slip_(options.slip),
      exempt_(options.exempt),
      slots_(options.rate == 0 ? 0 : std::bit_ceil(std::max(options.slots, kProbe))) {}

uint64_t ClientRateLimiter::Tag(const loop::SocketAddress& client) const {
  uint64_t tag = 0;
  if (client.is_v4()) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(client.sockaddr_ptr());
    uint32_t address = ntohl(in->sin_addr.s_addr);
    address &= static_cast<uint32_t>(~uint64_t{0} << (32 - prefix_v4_));
    tag = Mix((uint64_t{4} << 32) | address);
  } else if (client.is_v6()) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(client.sockaddr_ptr());
    const auto* bytes = reinterpret_cast<const uint8_t*>(&in6->sin6_addr);
    const uint64_t high = Keep(BigEndian64(bytes), prefix_v6_);
    const uint64_t low = Keep(BigEndian64(bytes + 8), prefix_v6_ - 64);
    tag = Mix(Mix(high ^ 6) ^ low);
  }
  return tag == 0 ? 1 : tag;  // 0 marks an empty slot
}

bool ClientRateLimiter::Exempt(const loop::SocketAddress& client) const {
  if (exempt_.empty()) return false;
  const std::optional<IpAddress> ip = IpOf(client);
  if (!ip) return false;
  return std::any_of(exempt_.begin(), exempt_.end(),
                     [&](const IpPrefix& prefix) { return prefix.Contains(*ip); });
}

ClientRateLimiter::Slot& ClientRateLimiter::Find(uint64_t tag, uint64_t now_ns) {
  const size_t mask = slots_.size() - 1;
  const size_t first = static_cast<size_t>(tag) & mask;
  Slot* victim = nullptr;
  uint64_t victim_tat = UINT64_MAX;
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& slot = slots_[(first + i) & mask];
    const uint64_t held = slot.tag.load(std::memory_order_relaxed);
    if (held == tag) return slot;
    const uint64_t tat = held == 0 ? 0 : slot.tat_ns.load(std::memory_order_relaxed);
    if (victim == nullptr || tat < victim_tat) {
      victim = &slot;
      victim_tat = tat;
    }
  }
  uint64_t old = victim->tag.load(std::memory_order_relaxed);
  if (!victim->tag.compare_exchange_strong(old, tag, std::memory_order_relaxed)) {
    // Another thread claimed it meanwhile (for this client, most likely): use it as it is.
    return *victim;
  }
  if (old == 0) {
    tracked_.fetch_add(1, std::memory_order_relaxed);
  } else if (victim_tat > now_ns) {
    // Its bucket was not full: that client starts over with a full one.
    busy_evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  victim->tat_ns.store(now_ns, std::memory_order_relaxed);
  victim->limited.store(0, std::memory_order_relaxed);
  return *victim;
}

RateVerdict ClientRateLimiter::Check(const loop::SocketAddress& client, uint64_t now_ns) {
  if (!enabled() || Exempt(client)) return RateVerdict::kPass;
  Slot& slot = Find(Tag(client), now_ns);
  uint64_t tat = slot.tat_ns.load(std::memory_order_relaxed);
  while (true) {
    if (tat > now_ns + tolerance_ns_) break;  // over the limit
    const uint64_t next = std::max(tat, now_ns) + emission_ns_;
    if (slot.tat_ns.compare_exchange_weak(tat, next, std::memory_order_relaxed)) {
      return RateVerdict::kPass;
    }
  }
  const uint32_t limited = slot.limited.fetch_add(1, std::memory_order_relaxed) + 1;
  return slip_ != 0 && limited % slip_ == 0 ? RateVerdict::kSlip : RateVerdict::kDrop;
}

}  // namespace kdns::server

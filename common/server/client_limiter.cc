#include "common/server/client_limiter.h"

#include <glog/logging.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/limits/limits.h"
#include "common/loop/socket_address.h"
#include "common/server/waiting_queries.h"

namespace kdns::server {
namespace {

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

void PutBigEndian64(uint64_t word, uint8_t* bytes) {
  for (int i = 7; i >= 0; --i) {
    bytes[i] = static_cast<uint8_t>(word);
    word >>= 8;
  }
}

// Slot::meta of a client: its family (4 or 6) and prefix length.
constexpr uint32_t Meta(uint32_t family, uint8_t length) { return (family << 8) | length; }

// Arrivals per window as queries per second.
double PerSecond(uint32_t per_window) {
  return per_window * 1e9 / static_cast<double>(RateTable::kWindowNs);
}

}  // namespace

ClientLimiter::ClientLimiter(const ClientLimitOptions& options)
    : options_(options),
      emission_ns_(options.rate == 0 ? 0 : std::max<uint64_t>(1, 1'000'000'000ull / options.rate)),
      tolerance_ns_(emission_ns_ *
                    (std::max(options.burst == 0 ? options.rate : options.burst, uint32_t{1}) - 1)),
      shedding_enabled_(options.shed),
      table_(options.rate == 0 && !options.shed ? 0 : options.slots) {}

bool ClientLimiter::Exempt(const loop::SocketAddress& client) const {
  if (options_.exempt.empty()) return false;
  const IpAddress ip = loop::IpOf(client);
  return std::any_of(options_.exempt.begin(), options_.exempt.end(),
                     [&](const IpPrefix& prefix) { return prefix.Contains(ip); });
}

ClientLimiter::Key ClientLimiter::KeyOf(const loop::SocketAddress& client) const {
  Key key;
  if (client.is_v4()) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(client.sockaddr_ptr());
    const uint8_t length = std::min<uint8_t>(options_.prefix_v4, 32);
    key.high = Keep(uint64_t{ntohl(in->sin_addr.s_addr)} << 32, length) >> 32;
    key.meta = Meta(4, length);
    key.tag = MixTag((uint64_t{4} << 32) | key.high);
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(client.sockaddr_ptr());
    const auto* bytes = reinterpret_cast<const uint8_t*>(&in6->sin6_addr);
    const uint8_t length = std::min<uint8_t>(options_.prefix_v6, 128);
    key.high = Keep(BigEndian64(bytes), length);
    key.low = Keep(BigEndian64(bytes + 8), length - 64);
    key.meta = Meta(6, length);
    key.tag = MixTag(MixTag(key.high ^ 6) ^ key.low);
  }
  return key;
}

RateTable::Slot& ClientLimiter::SlotOf(const loop::SocketAddress& client, uint64_t now_ns) {
  const Key key = KeyOf(client);
  bool claimed = false;
  RateTable::Slot& slot = table_.Find(key.tag, now_ns, &claimed);
  if (claimed) {
    slot.key_high.store(key.high, std::memory_order_relaxed);
    slot.key_low.store(key.low, std::memory_order_relaxed);
    slot.meta.store(key.meta, std::memory_order_relaxed);
  }
  return slot;
}

bool ClientLimiter::IsLight(const loop::SocketAddress& client, uint64_t now_ns) {
  if (table_.capacity() != 0 &&
      now_ns >= median_at_ns_.load(std::memory_order_relaxed) + kMedianAgeNs) {
    std::unique_lock lock(scan_mutex_, std::try_to_lock);
    if (lock.owns_lock()) ScanRates(now_ns);
  }
  const uint32_t median = median_.load(std::memory_order_relaxed);
  if (median == 0 || table_.capacity() == 0 || !(client.is_v4() || client.is_v6()) ||
      Exempt(client)) {
    return true;
  }
  const RateTable::Slot* slot = table_.Lookup(KeyOf(client).tag);
  return slot == nullptr || RateTable::RecentRate(*slot, now_ns) <= 2 * uint64_t{median};
}

ClientVerdict ClientLimiter::Check(const loop::SocketAddress& client, uint64_t now_ns) {
  if (!enabled() || !(client.is_v4() || client.is_v6()) || Exempt(client)) {
    return ClientVerdict::kPass;
  }
  RateTable::Slot& slot = SlotOf(client, now_ns);
  const RateTable::Arrivals arrivals = RateTable::Arrive(slot, now_ns);
  if (arrivals.current > shed_cap_.load(std::memory_order_relaxed)) return ClientVerdict::kShed;
  if (!limiting() || RateTable::Charge(slot, now_ns, emission_ns_, tolerance_ns_)) {
    return ClientVerdict::kPass;
  }
  const uint32_t limited = slot.limited.load(std::memory_order_relaxed);
  if (options_.slip != 0 && limited % options_.slip == 0) {
    slipped_.fetch_add(1, std::memory_order_relaxed);
    return ClientVerdict::kSlip;
  }
  return ClientVerdict::kLimited;
}

void ClientLimiter::Tick(uint64_t now_ns, Overload seen) {
  if (!enabled()) return;
  if (seen != Overload::kNone) backlog_seen_.store(1, std::memory_order_relaxed);
  uint64_t next = next_tick_ns_.load(std::memory_order_relaxed);
  if (now_ns < next ||
      !next_tick_ns_.compare_exchange_strong(next, now_ns + kTickNs, std::memory_order_relaxed)) {
    return;
  }
  LogOffenders(now_ns);
  if (!shedding_enabled_) return;
  Overload overload = backlog_seen_.exchange(0, std::memory_order_relaxed) != 0
                          ? Overload::kReceiveBacklog
                          : Overload::kNone;
  // From half full on, keep the median current for the budget's reserve (IsLight).
  const size_t waiting_percent = options_.waiting == nullptr || options_.waiting->max() == 0
                                     ? 0
                                     : options_.waiting->waiting() * 100 / options_.waiting->max();
  if (waiting_percent >= kWaitingOverloadPercent) overload = Overload::kWaitingQueries;
  const uint32_t cap = shed_cap_.load(std::memory_order_relaxed);
  if (overload == Overload::kNone && waiting_percent < 50) {
    RaiseCap(cap, now_ns);
    return;
  }
  std::unique_lock lock(scan_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  ScanRates(now_ns);
  if (overload == Overload::kNone) {
    RaiseCap(cap, now_ns);
    return;
  }
  last_overload_ns_.store(now_ns, std::memory_order_relaxed);
  const uint32_t lowered = LowerCap(cap);
  if (lowered != cap) {
    shed_reason_.store(overload, std::memory_order_relaxed);
    shed_cap_.store(lowered, std::memory_order_relaxed);
  }
}

void ClientLimiter::RaiseCap(uint32_t cap, uint64_t now_ns) {
  // Quiet for a second: let the heavy clients back in, a half more per tick.
  if (cap == kNotShedding ||
      now_ns < last_overload_ns_.load(std::memory_order_relaxed) + 10 * kTickNs) {
    return;
  }
  const uint64_t raised = uint64_t{cap} + cap / 2 + 1;
  shed_cap_.store(raised >= RateTable::kMaxCount ? kNotShedding : static_cast<uint32_t>(raised),
                  std::memory_order_relaxed);
}

void ClientLimiter::LogOffenders(uint64_t now_ns) {
  if (now_ns < next_log_ns_.load(std::memory_order_relaxed)) return;
  const uint64_t hits = limits::LimitHits(limits::Limit::kClientRate) +
                        limits::LimitHits(limits::Limit::kShedReceiveBacklog) +
                        limits::LimitHits(limits::Limit::kShedWaitingQueries);
  const uint64_t since = hits - hits_at_last_log_.exchange(hits, std::memory_order_relaxed);
  if (since == 0) return;
  next_log_ns_.store(now_ns + kLogIntervalNs, std::memory_order_relaxed);
  std::string top;
  for (const TopClient& client : Top(kLoggedOffenders, now_ns)) {
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.0f", client.queries_per_second);
    top += (top.empty() ? "" : ", ") + client.client.ToString() + " " + rate + " q/s" +
           (client.shed ? " (shed)" : "") +
           (client.limited > 0 ? " (" + std::to_string(client.limited) + " limited)" : "");
  }
  LOG(WARNING) << since << " queries limited or shed since the last line; heaviest clients now: "
               << (top.empty() ? "none" : top) << " (more on --debug-address: /debug/top-clients)";
}

void ClientLimiter::ScanRates(uint64_t now_ns) {
  std::vector<uint32_t>& rates = scratch_;
  rates.clear();
  for (const RateTable::Slot& slot : table_.slots()) {
    if (slot.tag.load(std::memory_order_relaxed) == 0) continue;
    const uint32_t rate = RateTable::RecentRate(slot, now_ns);
    if (rate > 0) rates.push_back(rate);
  }
  std::sort(rates.begin(), rates.end(), std::greater<>());
  // One client alone, or none: no one is heavier than the others.
  median_.store(rates.size() < 2 ? 0 : rates[rates.size() - 1 - (rates.size() - 1) / 2],
                std::memory_order_relaxed);
  median_at_ns_.store(now_ns, std::memory_order_relaxed);
}

uint32_t ClientLimiter::LowerCap(uint32_t cap) const {
  const std::vector<uint32_t>& rates = scratch_;
  // One client alone, or none: there is no one to be fair to.
  if (rates.size() < 2) return cap;
  const uint32_t median = rates[rates.size() - 1 - (rates.size() - 1) / 2];
  uint64_t admitted = 0;
  for (uint32_t rate : rates) admitted += std::min(rate, cap);
  const uint64_t target = admitted - admitted / 4;
  // Water-filling: the top k clients at level L, the rest as they are, sum to target.
  uint64_t rest = admitted;  // the sum of min(rate, cap) over rates[k..]
  uint64_t level = 0;
  for (size_t k = 1; k <= rates.size(); ++k) {
    rest -= std::min(rates[k - 1], cap);
    if (target < rest) continue;
    level = (target - rest) / k;
    if (k == rates.size() || level >= std::min(rates[k], cap)) break;
  }
  level = std::max<uint64_t>({level, median, 1});
  if (level >= std::min(rates.front(), cap)) return cap;  // no one left to cut
  return static_cast<uint32_t>(level);
}

std::vector<ClientLimiter::TopClient> ClientLimiter::Top(size_t count, uint64_t now_ns) const {
  struct Entry {
    uint32_t rate;
    const RateTable::Slot* slot;
  };
  std::vector<Entry> entries;
  for (const RateTable::Slot& slot : table_.slots()) {
    if (slot.tag.load(std::memory_order_relaxed) == 0) continue;
    const uint32_t rate = RateTable::RecentRate(slot, now_ns);
    if (rate > 0) entries.push_back({rate, &slot});
  }
  const size_t n = std::min(count, entries.size());
  std::partial_sort(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(n),
                    entries.end(), [](const Entry& a, const Entry& b) { return a.rate > b.rate; });
  const uint32_t cap = shed_cap();
  std::vector<TopClient> top;
  top.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const RateTable::Slot& slot = *entries[i].slot;
    const uint32_t meta = slot.meta.load(std::memory_order_relaxed);
    const auto length = static_cast<uint8_t>(meta & 0xff);
    std::optional<IpAddress> address;
    if ((meta >> 8) == 4) {
      const auto v4 = static_cast<uint32_t>(slot.key_high.load(std::memory_order_relaxed));
      const std::array<uint8_t, 4> bytes = {
          static_cast<uint8_t>(v4 >> 24), static_cast<uint8_t>(v4 >> 16),
          static_cast<uint8_t>(v4 >> 8), static_cast<uint8_t>(v4)};
      address = IpAddress::FromBytes(bytes);
    } else {
      std::array<uint8_t, 16> bytes{};
      PutBigEndian64(slot.key_high.load(std::memory_order_relaxed), bytes.data());
      PutBigEndian64(slot.key_low.load(std::memory_order_relaxed), bytes.data() + 8);
      address = IpAddress::FromBytes(bytes);
    }
    if (!address) continue;
    top.push_back({IpPrefix::Of(*address, length), PerSecond(entries[i].rate),
                   slot.limited.load(std::memory_order_relaxed), entries[i].rate > cap});
  }
  return top;
}

}  // namespace kdns::server

// The cache's statistics as dnsmasq publishes them (CHAOS TXT `hits.bind.`, `misses.bind.`,
// `evictions.bind.`, `insertions.bind.`, `cachesize.bind.`; frontend-cache answers them the
// same way), and the counters the sidecar exports from them.
//
// ParseStatReply() reads one reply with kube-dns's checks (pkg/dnsmasq/metrics.go): one
// answer record, of type TXT, holding one string, a decimal number. Anything else is an
// error with kube-dns's text.
//
// CounterMirror turns the cache's absolute values, which fall back to zero when the cache
// process restarts, into counters that never decrease: each exported counter is the sum of
// the completed "generations" (the last value seen before each restart) plus the current
// value. A restart is recognised when any of the four counters goes backwards (they are
// all reset together, so one that has already caught up with its old value is still
// counted right). A restart between two polls whose counters have all caught up is
// invisible; the little traffic of that window is lost, never counted twice. The cache
// size is a setting, not a count: it is exported as its highest value seen (kube-dns
// exports `max_size` as a counter, which must not go down).
//
// Pure. Thread: values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kdns::sidecar {

// In kube-dns's order (dnsmasq.AllMetrics).
enum class DnsmasqStat : uint8_t { kHits, kMisses, kEvictions, kInsertions, kCacheSize };
inline constexpr size_t kDnsmasqStatCount = 5;
inline constexpr std::array<DnsmasqStat, kDnsmasqStatCount> kAllDnsmasqStats = {
    DnsmasqStat::kHits, DnsmasqStat::kMisses, DnsmasqStat::kEvictions, DnsmasqStat::kInsertions,
    DnsmasqStat::kCacheSize};

// "hits.bind.", ..., "cachesize.bind.".
std::string_view DnsmasqStatQueryName(DnsmasqStat stat);

using DnsmasqValues = std::array<uint64_t, kDnsmasqStatCount>;  // indexed by DnsmasqStat

// Reads the value from the reply to `<stat>.bind. CH TXT`. False with a one-line *error.
[[nodiscard]] bool ParseStatReply(std::span<const uint8_t> reply, DnsmasqStat stat, uint64_t* value,
                                  std::string* error);

class CounterMirror {
 public:
  // One complete poll round. Returns true when it shows a restart of the cache.
  bool Observe(const DnsmasqValues& values);

  // What to export: base + current for the four counters, the highest cache size seen.
  uint64_t Exported(DnsmasqStat stat) const;
  // The value the cache reported last.
  uint64_t Current(DnsmasqStat stat) const { return last_[static_cast<size_t>(stat)]; }
  uint64_t restarts() const { return restarts_; }
  bool observed() const { return observed_; }

 private:
  DnsmasqValues base_{};
  DnsmasqValues last_{};
  uint64_t max_cache_size_ = 0;
  uint64_t restarts_ = 0;
  bool observed_ = false;
};

}  // namespace kdns::sidecar

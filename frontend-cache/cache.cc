#include "frontend-cache/cache.h"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>

#include "common/base/single_writer.h"
#include "common/dns/header.h"
#include "common/dns/wire_reader.h"

namespace kdns::frontend {
namespace {

constexpr size_t kMaxShards = 64;
constexpr size_t kMinEntriesPerShard = 32;
constexpr int kShardHashShift = 58;  // shards come from the top 6 bits, index slots from the low

// A fast non-cryptographic hash over the lower-cased name, 8 octets at a time, finished
// with MurmurHash3's mixer. Clients cannot choose our buckets in a harmful way: a bucket is
// a short linear-probe run in a table at most half full.
uint64_t Fmix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

uint64_t HashKey(std::span<const uint8_t> wire, dns::RrType type, dns::RrClass cls,
                 bool dnssec_ok) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t{static_cast<uint16_t>(type)} << 17) ^
               (uint64_t{static_cast<uint16_t>(cls)} << 1) ^ (dnssec_ok ? 1 : 0);
  size_t i = 0;
  for (; i + 8 <= wire.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, wire.data() + i, 8);
    h = std::rotl((h ^ word) * 0x9e3779b97f4a7c15ull, 31);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, wire.data() + i, wire.size() - i);
  return Fmix64(h ^ tail ^ (uint64_t{wire.size()} << 56));
}

// Written only under the shard's lock: one writer at a time, no locked instruction.
void Bump(std::atomic<uint64_t>& counter) { AddSingleWriter(counter); }

}  // namespace

CacheKey::CacheKey(const dns::Name& qname, dns::RrType qtype, dns::RrClass qclass, bool dnssec_ok)
    : name_(qname.Lowercased()),
      type_(qtype),
      class_(qclass),
      dnssec_ok_(dnssec_ok),
      hash_(HashKey(name_.wire(), qtype, qclass, dnssec_ok)) {}

CacheKey CacheKey::FromQuery(const dns::Query& query) {
  return CacheKey(query.qname, query.qtype, query.qclass,
                  query.edns.has_value() && query.edns->dnssec_ok);
}

struct Entry {
  uint64_t hash = 0;
  uint64_t inserted_ms = 0;
  uint64_t expires_ms = 0;
  uint64_t stale_until_ms = 0;
  uint32_t lifetime_s = 0;
  uint32_t hits = 0;
  uint32_t question_end = 0;
  dns::RrType type = dns::RrType::kA;
  dns::RrClass cls = dns::RrClass::kIn;
  bool dnssec_ok = false;
  bool occupied = false;
  bool referenced = false;  // CLOCK's second-chance bit
  bool prefetch_asked = false;
  bool negative = false;
  // The reply as prepared by PrepareStoredResponse; its question holds the lower-cased
  // name, so it doubles as the key. Capacity is kept across reuse of the slot.
  std::vector<uint8_t> bytes;
  std::vector<uint16_t> ttl_offsets;

  bool Matches(const CacheKey& key) const {
    const auto wire = key.name().wire();
    return occupied && hash == key.hash() && type == key.type() && cls == key.cls() &&
           dnssec_ok == key.dnssec_ok() && question_end == dns::kHeaderSize + wire.size() + 4 &&
           std::memcmp(bytes.data() + dns::kHeaderSize, wire.data(), wire.size()) == 0;
  }
};

struct alignas(64) Cache::Shard {
  std::mutex mutex;
  std::vector<Entry> entries;
  // Open addressing with linear probing: slot + 1, 0 for empty; at most half full.
  std::vector<uint32_t> index;
  size_t index_mask = 0;
  size_t hand = 0;  // CLOCK hand
  size_t occupied = 0;

  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> stale_hits{0};
  std::atomic<uint64_t> insertions{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> prefetches{0};
  std::atomic<uint64_t> size{0};

  void Init(size_t capacity) {
    entries.resize(capacity);
    index.assign(std::bit_ceil(std::max<size_t>(capacity * 2, 4)), 0);
    index_mask = index.size() - 1;
  }

  // The slot holding `key`, or -1.
  int64_t FindSlot(const CacheKey& key) const {
    for (size_t pos = key.hash() & index_mask;; pos = (pos + 1) & index_mask) {
      const uint32_t value = index[pos];
      if (value == 0) return -1;
      if (entries[value - 1].Matches(key)) return value - 1;
    }
  }

  void IndexInsert(size_t slot) {
    size_t pos = entries[slot].hash & index_mask;
    while (index[pos] != 0) pos = (pos + 1) & index_mask;
    index[pos] = static_cast<uint32_t>(slot + 1);
  }

  // Backward-shift deletion keeps every probe run unbroken without tombstones.
  void IndexErase(size_t slot) {
    size_t hole = entries[slot].hash & index_mask;
    while (index[hole] != slot + 1) hole = (hole + 1) & index_mask;
    for (size_t j = (hole + 1) & index_mask; index[j] != 0; j = (j + 1) & index_mask) {
      const size_t home = entries[index[j] - 1].hash & index_mask;
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        index[hole] = index[j];
        hole = j;
      }
    }
    index[hole] = 0;
  }

  void Remove(size_t slot) {
    IndexErase(slot);
    Entry& entry = entries[slot];
    entry.occupied = false;
    entry.bytes.clear();
    entry.ttl_offsets.clear();
    --occupied;
    size.store(occupied, std::memory_order_relaxed);
  }

  // A free slot for a new entry: the first empty or expired one under the hand, else the
  // first whose second chance is used up (an eviction).
  size_t TakeSlot(uint64_t now_ms) {
    for (size_t step = 0;; ++step) {
      const size_t slot = hand;
      hand = hand + 1 == entries.size() ? 0 : hand + 1;
      Entry& entry = entries[slot];
      if (!entry.occupied) return slot;
      if (now_ms >= entry.expires_ms) {
        Remove(slot);
        return slot;
      }
      if (entry.referenced && step < entries.size()) {
        entry.referenced = false;
        continue;
      }
      Bump(evictions);
      Remove(slot);
      return slot;
    }
  }
};

Cache::Cache(const CacheOptions& options, const Clock& clock)
    : options_(options), clock_(clock), capacity_(options.capacity) {
  if (capacity_ == 0) return;
  size_t shards = options.shard_count != 0
                      ? std::bit_ceil(options.shard_count)
                      : std::bit_floor(std::max<size_t>(1, capacity_ / kMinEntriesPerShard));
  shard_count_ = std::min({shards, kMaxShards, std::bit_floor(capacity_)});
  shards_ = std::make_unique<Shard[]>(shard_count_);
  for (size_t i = 0; i < shard_count_; ++i) {
    shards_[i].Init(capacity_ / shard_count_ + (i < capacity_ % shard_count_ ? 1 : 0));
  }
}

Cache::~Cache() = default;

Cache::Shard& Cache::ShardFor(uint64_t hash) const {
  return shards_[(hash >> kShardHashShift) & (shard_count_ - 1)];
}

LookupResult Cache::Lookup(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                           size_t max_size_bytes) {
  return Find(key, query, out, max_size_bytes, Mode::kFresh);
}

LookupResult Cache::Peek(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                         size_t max_size_bytes) {
  return Find(key, query, out, max_size_bytes, Mode::kPeek);
}

LookupResult Cache::LookupStale(const CacheKey& key, const dns::Query& query,
                                std::span<uint8_t> out, size_t max_size_bytes) {
  return Find(key, query, out, max_size_bytes, Mode::kStale);
}

LookupResult Cache::Find(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                         size_t max_size_bytes, Mode mode) {
  if (capacity_ == 0) return {};
  Shard& shard = ShardFor(key.hash());
  const uint64_t now_ms = clock_.NowMs();
  std::lock_guard lock(shard.mutex);
  const int64_t slot = shard.FindSlot(key);
  Entry* entry = slot >= 0 ? &shard.entries[slot] : nullptr;
  TtlRewrite ttl;
  LookupResult result;
  if (entry != nullptr && now_ms < entry->expires_ms) {
    ttl.age_s = static_cast<uint32_t>((now_ms - std::min(now_ms, entry->inserted_ms)) / 1000);
    result.status = LookupStatus::kHit;
  } else if (entry != nullptr && mode == Mode::kStale && now_ms < entry->stale_until_ms) {
    ttl.fixed_ttl = kStaleTtlS;
    result.status = LookupStatus::kStale;
  } else {
    if (entry != nullptr && now_ms >= entry->stale_until_ms) shard.Remove(slot);
    if (mode == Mode::kFresh) Bump(shard.misses);
    return {};
  }
  result.size = WriteCachedResponse(entry->bytes, entry->question_end, entry->ttl_offsets, query,
                                    ttl, out, max_size_bytes);
  if (result.size == 0) {  // the caller's buffer cannot hold even a truncated reply
    if (mode == Mode::kFresh) Bump(shard.misses);
    return {};
  }
  entry->referenced = true;
  result.negative = entry->negative;
  if (result.status == LookupStatus::kStale) {
    Bump(shard.stale_hits);
    return result;
  }
  Bump(shard.hits);
  ++entry->hits;
  // Prefetch in the last 10% of the lifetime, once per entry.
  if (options_.prefetch && !entry->prefetch_asked && entry->hits >= options_.prefetch_min_hits &&
      (entry->expires_ms - now_ms) * 10 <= uint64_t{entry->lifetime_s} * 1000) {
    entry->prefetch_asked = true;
    result.prefetch = true;
    Bump(shard.prefetches);
  }
  return result;
}

InsertOutcome Cache::Insert(const CacheKey& key, std::span<const uint8_t> response) {
  if (capacity_ == 0) return {InsertResult::kDisabled, Cacheability::kCacheable};
  // Analysis and preparation happen before taking the lock, in per-thread scratch space.
  thread_local std::vector<uint16_t> ttl_offsets;
  thread_local std::vector<uint8_t> prepared;
  const ResponseAnalysis analysis =
      AnalyzeResponse(response, key.name(), key.type(), key.cls(), options_.policy, &ttl_offsets);
  if (analysis.result != Cacheability::kCacheable) {
    return {InsertResult::kNotCacheable, analysis.result};
  }
  prepared.assign(response.begin(), response.begin() + analysis.stored_size);
  PrepareStoredResponse(prepared, analysis, ttl_offsets, options_.policy);

  Shard& shard = ShardFor(key.hash());
  const uint64_t now_ms = clock_.NowMs();
  std::lock_guard lock(shard.mutex);
  int64_t slot = shard.FindSlot(key);
  const bool replace = slot >= 0;
  if (!replace) slot = static_cast<int64_t>(shard.TakeSlot(now_ms));
  Entry& entry = shard.entries[slot];
  entry.hash = key.hash();
  entry.inserted_ms = now_ms;
  entry.expires_ms = now_ms + uint64_t{analysis.lifetime_s} * 1000;
  entry.stale_until_ms = entry.expires_ms + uint64_t{options_.stale_max_s} * 1000;
  entry.lifetime_s = analysis.lifetime_s;
  entry.hits = 0;
  entry.question_end = static_cast<uint32_t>(analysis.question_end);
  entry.type = key.type();
  entry.cls = key.cls();
  entry.dnssec_ok = key.dnssec_ok();
  entry.referenced = false;
  entry.prefetch_asked = false;
  entry.negative = analysis.negative;
  entry.bytes.assign(prepared.begin(), prepared.end());
  entry.ttl_offsets.assign(ttl_offsets.begin(), ttl_offsets.end());
  if (!replace) {
    entry.occupied = true;
    shard.IndexInsert(slot);
    ++shard.occupied;
    shard.size.store(shard.occupied, std::memory_order_relaxed);
  }
  Bump(shard.insertions);
  return {InsertResult::kInserted, Cacheability::kCacheable};
}

size_t Cache::Flush() {
  size_t dropped = 0;
  for (size_t i = 0; i < shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    dropped += shard.occupied;
    for (Entry& entry : shard.entries) {
      entry.occupied = false;
      entry.bytes.clear();
      entry.ttl_offsets.clear();
    }
    std::fill(shard.index.begin(), shard.index.end(), 0);
    shard.occupied = 0;
    shard.size.store(0, std::memory_order_relaxed);
  }
  return dropped;
}

size_t Cache::FlushDomain(const dns::Name& domain) {
  size_t dropped = 0;
  for (size_t i = 0; i < shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    for (size_t slot = 0; slot < shard.entries.size(); ++slot) {
      const Entry& entry = shard.entries[slot];
      if (!entry.occupied) continue;
      dns::Name name;
      dns::WireReader reader(entry.bytes, dns::kHeaderSize, entry.bytes.size());
      if (reader.ReadName(&name) == dns::ParseError::kOk && !name.IsSubdomainOf(domain)) continue;
      shard.Remove(slot);
      ++dropped;
    }
  }
  return dropped;
}

CacheStats Cache::Stats() const {
  CacheStats stats;
  stats.capacity = capacity_;
  for (size_t i = 0; i < shard_count_; ++i) {
    const Shard& shard = shards_[i];
    constexpr auto kRelaxed = std::memory_order_relaxed;
    stats.hits += shard.hits.load(kRelaxed);
    stats.misses += shard.misses.load(kRelaxed);
    stats.stale_hits += shard.stale_hits.load(kRelaxed);
    stats.insertions += shard.insertions.load(kRelaxed);
    stats.evictions += shard.evictions.load(kRelaxed);
    stats.prefetches += shard.prefetches.load(kRelaxed);
    stats.size += shard.size.load(kRelaxed);
  }
  return stats;
}

}  // namespace kdns::frontend

#include "frontend-cache/cache.h"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <string>

#include "common/base/hash.h"
#include "common/base/single_writer.h"
#include "common/dns/header.h"
#include "common/dns/wire_reader.h"
#include "common/limits/limits.h"

namespace kdns::frontend {
namespace {

constexpr size_t kMaxShards = 64;
constexpr size_t kMinEntriesPerShard = 32;
constexpr size_t kMinIndexSize = 8;
// What the allocator keeps per allocation besides what was asked (glibc: a size word,
// rounded to 16 bytes), counted in each entry's cost so --cache-bytes bounds real memory.
constexpr size_t kAllocationOverheadBytes = 16;
constexpr int kShardHashShift = 58;  // shards come from the top 6 bits, index slots from the low
constexpr uint8_t kNoShard = 0xFF;
static_assert(kMaxShards < kNoShard);

// A fast non-cryptographic hash over the lower-cased name, 8 octets at a time, finished
// with MurmurHash3's mixer (Mix64). Clients cannot choose our buckets in a harmful way: a
// bucket is a short linear-probe run in a table at most half full.

uint64_t HashKey(std::span<const uint8_t> wire, dns::RrType type, dns::RrClass cls, bool dnssec_ok,
                 bool checking_disabled) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t{static_cast<uint16_t>(type)} << 17) ^
               (uint64_t{static_cast<uint16_t>(cls)} << 2) ^ (checking_disabled ? 2 : 0) ^
               (dnssec_ok ? 1 : 0);
  size_t i = 0;
  for (; i + 8 <= wire.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, wire.data() + i, 8);
    h = std::rotl((h ^ word) * 0x9e3779b97f4a7c15ull, 31);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, wire.data() + i, wire.size() - i);
  return Mix64(h ^ tail ^ (uint64_t{wire.size()} << 56));
}

// Written only under the shard's lock: one writer at a time, no locked instruction.
void Bump(std::atomic<uint64_t>& counter) { AddSingleWriter(counter); }

}  // namespace

CacheKey::CacheKey(const dns::Query& query)
    : name_(query.qname.Lowercased()),
      type_(query.qtype),
      class_(query.qclass),
      dnssec_ok_(query.edns.has_value() && query.edns->dnssec_ok),
      checking_disabled_(query.header.cd),
      hash_(HashKey(name_.wire(), type_, class_, dnssec_ok_, checking_disabled_)) {}

CacheKey CacheKey::FromQuery(const dns::Query& query) { return CacheKey(query); }

size_t EntryCostBytes(size_t reply_bytes, size_t ttl_count) {
  return ttl_count * sizeof(uint16_t) + ((reply_bytes + 1) & ~size_t{1}) + kAllocationOverheadBytes;
}

// An answer as kept: the TTL offsets, then the reply bytes, in one allocation of exactly
// their size (uint16_t elements, so the offsets are aligned; the bytes are read through
// uint8_t, which may alias anything).
struct Cache::StoredAnswer {
  std::unique_ptr<uint16_t[]> data;
  uint32_t size_bytes = 0;
  uint32_t ttl_count = 0;

  StoredAnswer() = default;
  StoredAnswer(std::span<const uint8_t> bytes, std::span<const uint16_t> ttl_offsets)
      : data(new uint16_t[ttl_offsets.size() + (bytes.size() + 1) / 2]),
        size_bytes(static_cast<uint32_t>(bytes.size())),
        ttl_count(static_cast<uint32_t>(ttl_offsets.size())) {
    std::copy(ttl_offsets.begin(), ttl_offsets.end(), data.get());
    std::memcpy(data.get() + ttl_count, bytes.data(), bytes.size());
  }

  std::span<const uint8_t> bytes() const {
    return {reinterpret_cast<const uint8_t*>(data.get() + ttl_count), size_bytes};
  }
  std::span<const uint16_t> ttl_offsets() const { return {data.get(), ttl_count}; }
  size_t cost_bytes() const { return data ? EntryCostBytes(size_bytes, ttl_count) : 0; }
};

struct Cache::Entry {
  uint64_t hash = 0;
  uint64_t inserted_ms = 0;
  uint64_t expires_ms = 0;
  uint64_t stale_until_ms = 0;
  // The reply as prepared by PrepareStoredResponse; its question holds the lower-cased
  // name, so it doubles as the key.
  StoredAnswer answer;
  uint32_t lifetime_s = 0;
  uint32_t hits = 0;  // since insertion, counted up to prefetch_min_hits (all Find asks)
  uint32_t question_end = 0;
  // The shard that indexes this slot, kNoShard while the slot is free or being filled.
  // Changed only under that shard's lock; the hand reads it without one to know which lock
  // to take, and reads it again under that lock to be sure.
  std::atomic<uint8_t> shard{kNoShard};
  dns::RrType type = dns::RrType::kA;
  dns::RrClass cls = dns::RrClass::kIn;
  bool dnssec_ok = false;
  bool checking_disabled = false;
  bool referenced = false;  // CLOCK's second-chance bit
  bool prefetch_asked = false;
  bool negative = false;

  bool Matches(const CacheKey& key) const {
    const auto wire = key.name().wire();
    return hash == key.hash() && type == key.type() && cls == key.cls() &&
           dnssec_ok == key.dnssec_ok() && checking_disabled == key.checking_disabled() &&
           question_end == dns::kHeaderSize + wire.size() + 4 &&
           std::memcmp(answer.bytes().data() + dns::kHeaderSize, wire.data(), wire.size()) == 0;
  }
};

// A shard indexes the slots it holds; the slots themselves are the Cache's pool. A slot
// belongs to at most one shard at a time, and is read or written only under that shard's
// lock (or, while free, by whoever took it from the pool).
struct alignas(64) Cache::Shard {
  std::mutex mutex;
  // Beside the mutex, on its cache line: a hit or miss then writes one line of the shard.
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  Entry* slots = nullptr;
  uint8_t number = 0;  // this shard's place in the Cache's array, as Entry::shard names it
  // Open addressing with linear probing: slot + 1, 0 for empty; at most half full, and
  // shrunk when under an eighth full, so its size follows the entries held.
  std::vector<uint32_t> index{std::vector<uint32_t>(kMinIndexSize, 0)};
  size_t index_mask = kMinIndexSize - 1;
  size_t initial_index_size = kMinIndexSize;

  std::atomic<uint64_t> stale_hits{0};
  std::atomic<uint64_t> insertions{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> prefetches{0};
  std::atomic<uint64_t> size{0};  // entries indexed; written under the lock

  void Init(Entry* pool, uint8_t shard_number, size_t expected_entries) {
    slots = pool;
    number = shard_number;
    initial_index_size = std::bit_ceil(std::max(expected_entries * 2, kMinIndexSize));
    Rehash(initial_index_size);
  }

  size_t Size() const { return size.load(std::memory_order_relaxed); }

  // The slot holding `key`, or -1.
  int64_t FindSlot(const CacheKey& key) const {
    for (size_t pos = key.hash() & index_mask;; pos = (pos + 1) & index_mask) {
      const uint32_t value = index[pos];
      if (value == 0) return -1;
      if (slots[value - 1].Matches(key)) return value - 1;
    }
  }

  // The slots held, for a flush.
  std::vector<uint32_t> Held() const {
    std::vector<uint32_t> held;
    held.reserve(Size());
    for (uint32_t value : index) {
      if (value != 0) held.push_back(value - 1);
    }
    return held;
  }

  void IndexInsert(uint32_t slot) {
    size_t pos = slots[slot].hash & index_mask;
    while (index[pos] != 0) pos = (pos + 1) & index_mask;
    index[pos] = slot + 1;
  }

  // Backward-shift deletion keeps every probe run unbroken without tombstones.
  void IndexErase(uint32_t slot) {
    size_t hole = slots[slot].hash & index_mask;
    while (index[hole] != slot + 1) hole = (hole + 1) & index_mask;
    for (size_t j = (hole + 1) & index_mask; index[j] != 0; j = (j + 1) & index_mask) {
      const size_t home = slots[index[j] - 1].hash & index_mask;
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        index[hole] = index[j];
        hole = j;
      }
    }
    index[hole] = 0;
  }

  void Rehash(size_t index_size) {
    std::vector<uint32_t> old(index_size, 0);
    old.swap(index);
    index_mask = index_size - 1;
    for (uint32_t value : old) {
      if (value != 0) IndexInsert(value - 1);
    }
  }

  void Add(uint32_t slot) {
    if ((Size() + 1) * 2 > index.size()) Rehash(index.size() * 2);
    IndexInsert(slot);
    slots[slot].shard.store(number, std::memory_order_relaxed);
    size.store(Size() + 1, std::memory_order_relaxed);
  }

  void Drop(uint32_t slot) {
    IndexErase(slot);
    slots[slot].shard.store(kNoShard, std::memory_order_relaxed);
    size.store(Size() - 1, std::memory_order_relaxed);
    if (index.size() > initial_index_size && Size() * 8 < index.size()) Rehash(index.size() / 2);
  }
};

Cache::Cache(const CacheOptions& options, const Clock& clock)
    : options_(options), clock_(clock), capacity_(options.capacity), bytes_(options.max_bytes) {
  if (capacity_ == 0) return;
  CHECK_LE(capacity_, size_t{UINT32_MAX} - 1);
  const size_t shards = options.shard_count != 0
                            ? std::bit_ceil(options.shard_count)
                            : std::bit_floor(std::max<size_t>(1, capacity_ / kMinEntriesPerShard));
  shard_count_ = std::min({shards, kMaxShards, std::bit_floor(capacity_)});
  slots_ = std::make_unique<Entry[]>(capacity_);
  shards_ = std::make_unique<Shard[]>(shard_count_);
  for (size_t i = 0; i < shard_count_; ++i) {
    shards_[i].Init(slots_.get(), static_cast<uint8_t>(i),
                    (capacity_ + shard_count_ - 1) / shard_count_);
  }
  free_slots_.reserve(capacity_);
  for (size_t slot = capacity_; slot-- > 0;) free_slots_.push_back(static_cast<uint32_t>(slot));
}

Cache::~Cache() = default;

size_t Cache::ShardIndex(uint64_t hash) const {
  return (hash >> kShardHashShift) & (shard_count_ - 1);
}

Cache::Shard& Cache::ShardFor(uint64_t hash) const { return shards_[ShardIndex(hash)]; }

size_t Cache::ShardSize(size_t shard) const { return shards_[shard].Size(); }

std::optional<uint32_t> Cache::TakeFreeSlot() {
  std::lock_guard lock(free_mutex_);
  if (free_slots_.empty()) return std::nullopt;
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void Cache::FreeSlot(uint32_t slot) {
  std::lock_guard lock(free_mutex_);
  free_slots_.push_back(slot);
}

void Cache::RemoveLocked(Shard& shard, uint32_t slot) {
  shard.Drop(slot);
  Entry& entry = slots_[slot];
  if (entry.negative) negatives_.fetch_sub(1, std::memory_order_relaxed);
  entry.negative = false;
  bytes_.Give(entry.answer.cost_bytes());
  entry.answer = StoredAnswer();  // the memory goes back now, not at the slot's next use
}

Cache::Swept Cache::SweepLocked(uint64_t now_ms) {
  // Two turns at most: in the first an entry hit since the hand last passed keeps its place
  // (its bit cleared); in the second the next entry goes whatever its bit, as hits may have
  // set the bits again behind the hand.
  for (size_t step = 0; step < 2 * capacity_; ++step) {
    const uint32_t slot = static_cast<uint32_t>(hand_);
    hand_ = hand_ + 1 == capacity_ ? 0 : hand_ + 1;
    Entry& entry = slots_[slot];
    const uint8_t owner = entry.shard.load(std::memory_order_relaxed);
    if (owner == kNoShard) continue;  // free, or a new entry being filled
    Shard& shard = shards_[owner];
    std::lock_guard lock(shard.mutex);
    if (entry.shard.load(std::memory_order_relaxed) != owner) continue;  // moved meanwhile
    const bool live = now_ms < entry.expires_ms;
    if (live && entry.referenced && step < capacity_) {
      entry.referenced = false;
      continue;
    }
    if (live) Bump(shard.evictions);
    RemoveLocked(shard, slot);
    return {slot, live};
  }
  return {};
}

std::optional<uint32_t> Cache::TakeSlot(uint64_t now_ms) {
  if (std::optional<uint32_t> free = TakeFreeSlot()) return free;
  std::lock_guard lock(hand_mutex_);
  // Another insertion's hand may have freed more than it took while this one waited.
  if (std::optional<uint32_t> free = TakeFreeSlot()) return free;
  const Swept swept = SweepLocked(now_ms);
  if (swept.slot < 0) return std::nullopt;
  return static_cast<uint32_t>(swept.slot);
}

bool Cache::ReserveBytes(size_t cost, uint64_t now_ms) {
  while (!bytes_.TryTake(cost)) {
    Swept swept;
    {
      std::lock_guard lock(hand_mutex_);
      swept = SweepLocked(now_ms);
    }
    // Nothing left to evict: what holds the budget is other threads' reservations.
    if (swept.slot < 0) return false;
    FreeSlot(static_cast<uint32_t>(swept.slot));
    // Counted (and perhaps logged) without the hand, which other insertions wait for.
    if (swept.live) limits::RecordLimitHit(limits::Limit::kCacheBytes);
  }
  return true;
}

LookupResult Cache::Lookup(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                           size_t max_size_bytes) {
  return Find(key, query, out, max_size_bytes, Mode::kFresh);
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
  std::unique_lock lock(shard.mutex);
  const int64_t slot = shard.FindSlot(key);
  Entry* entry = slot >= 0 ? &slots_[slot] : nullptr;
  TtlRewrite ttl;
  LookupResult result;
  if (entry != nullptr && now_ms < entry->expires_ms) {
    ttl.age_s = static_cast<uint32_t>((now_ms - std::min(now_ms, entry->inserted_ms)) / 1000);
    result.status = LookupStatus::kHit;
  } else if (entry != nullptr && mode == Mode::kStale && now_ms < entry->stale_until_ms) {
    ttl.fixed_ttl = kStaleTtlS;
    result.status = LookupStatus::kStale;
  } else {
    if (mode == Mode::kFresh) Bump(shard.misses);
    if (entry != nullptr && now_ms >= entry->stale_until_ms) {
      RemoveLocked(shard, static_cast<uint32_t>(slot));
      lock.unlock();
      FreeSlot(static_cast<uint32_t>(slot));
    }
    return {};
  }
  result.size = WriteCachedResponse(entry->answer.bytes(), entry->question_end,
                                    entry->answer.ttl_offsets(), query, ttl, out, max_size_bytes);
  if (result.size == 0) {  // the caller's buffer cannot hold even a truncated reply
    if (mode == Mode::kFresh) Bump(shard.misses);
    return {};
  }
  // The entry is written only when something changes: a hot entry's cache line then stays
  // shared by the cores that hit it rather than moving to each one's cache on every hit.
  if (!entry->referenced) entry->referenced = true;
  result.negative = entry->negative;
  if (result.status == LookupStatus::kStale) {
    Bump(shard.stale_hits);
    return result;
  }
  Bump(shard.hits);
  if (entry->hits < options_.prefetch_min_hits) ++entry->hits;  // only this compares with it
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
  if (analysis.stored_size > options_.max_entry_bytes) {
    limits::RecordLimitHit(
        limits::Limit::kCacheEntryTooLarge,
        key.name().ToText() + " (" + std::to_string(analysis.stored_size) + " bytes)");
    return {InsertResult::kNotCacheable, Cacheability::kTooLarge};
  }
  prepared.assign(response.begin(), response.begin() + analysis.stored_size);
  PrepareStoredResponse(prepared, analysis, ttl_offsets, options_.policy);
  StoredAnswer answer(prepared, ttl_offsets);

  Shard& shard = ShardFor(key.hash());
  const uint64_t now_ms = clock_.NowMs();
  const size_t cost_bytes = answer.cost_bytes();
  if (!ReserveBytes(cost_bytes, now_ms)) return {InsertResult::kNoRoom, Cacheability::kCacheable};
  std::unique_lock lock(shard.mutex);
  int64_t slot = shard.FindSlot(key);
  bool indexed = slot >= 0;  // a replacement, in place
  if (!indexed) {
    // A new entry: take a slot without holding the shard's lock (the hand takes shard
    // locks), then look again, as another thread may have inserted the key meanwhile.
    lock.unlock();
    const std::optional<uint32_t> taken = TakeSlot(now_ms);
    if (!taken) {
      bytes_.Give(cost_bytes);
      return {InsertResult::kNoRoom, Cacheability::kCacheable};
    }
    lock.lock();
    slot = shard.FindSlot(key);
    indexed = slot >= 0;
    if (indexed) {
      FreeSlot(*taken);  // the spare goes back to the pool
    } else {
      slot = *taken;
    }
  }
  Entry& entry = slots_[slot];
  if (indexed && entry.negative) negatives_.fetch_sub(1, std::memory_order_relaxed);
  if (analysis.negative) negatives_.fetch_add(1, std::memory_order_relaxed);
  StoredAnswer old = std::move(entry.answer);
  entry.answer = std::move(answer);
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
  entry.checking_disabled = key.checking_disabled();
  entry.referenced = false;
  entry.prefetch_asked = false;
  entry.negative = analysis.negative;
  if (!indexed) shard.Add(static_cast<uint32_t>(slot));
  Bump(shard.insertions);
  lock.unlock();
  bytes_.Give(old.cost_bytes());
  return {InsertResult::kInserted, Cacheability::kCacheable};
}

size_t Cache::Flush() {
  return DropWhere([](const Entry&) { return true; });
}

namespace {

// True when the entry's question is `domain` or a name below it; an entry whose name does
// not read (it cannot happen: only parsed answers are stored) counts as under every domain.
template <class Entry>
bool Under(const Entry& entry, const dns::Name& domain) {
  const std::span<const uint8_t> bytes = entry.answer.bytes();
  dns::Name name;
  dns::WireReader reader(bytes, dns::kHeaderSize, bytes.size());
  return reader.ReadName(&name) != dns::ParseError::kOk || name.IsSubdomainOf(domain);
}

}  // namespace

size_t Cache::FlushDomain(const dns::Name& domain) {
  return DropWhere([&domain](const Entry& entry) { return Under(entry, domain); });
}

size_t Cache::DropNegative(const dns::Name& zone) {
  if (negatives() == 0) return 0;  // the usual case between changes: no walk at all
  return DropWhere([&zone](const Entry& entry) { return entry.negative && Under(entry, zone); });
}

size_t Cache::DropWhere(const std::function<bool(const Entry&)>& drop) {
  size_t dropped = 0;
  for (size_t i = 0; i < shard_count_; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard lock(shard.mutex);
    for (uint32_t slot : shard.Held()) {
      if (!drop(slots_[slot])) continue;
      RemoveLocked(shard, slot);
      FreeSlot(slot);
      ++dropped;
    }
  }
  return dropped;
}

CacheStats Cache::Stats() const {
  CacheStats stats;
  stats.capacity = capacity_;
  stats.capacity_bytes = capacity_ == 0 ? 0 : options_.max_bytes;
  stats.bytes = bytes_.used();
  for (size_t i = 0; i < shard_count_; ++i) {
    const Shard& shard = shards_[i];
    constexpr auto kRelaxed = std::memory_order_relaxed;
    stats.hits += shard.hits.load(kRelaxed);
    stats.misses += shard.misses.load(kRelaxed);
    stats.stale_hits += shard.stale_hits.load(kRelaxed);
    stats.insertions += shard.insertions.load(kRelaxed);
    stats.evictions += shard.evictions.load(kRelaxed);
    stats.prefetches += shard.prefetches.load(kRelaxed);
    stats.size += shard.Size();
  }
  return stats;
}

}  // namespace kdns::frontend

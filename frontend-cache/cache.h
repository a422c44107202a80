// The response cache of frontend-cache: upstream replies kept in wire form, served to
// clients with their own ID, name case and EDNS, and TTLs decremented by the entry's age.
//
// Key: (lower-cased qname, qtype, qclass, DO bit, CD bit). An entry keeps the reply bytes
// and the offset of every TTL field (cached_response.h) in one allocation of exactly their
// size, so a hit is one hash probe, a memcpy and a few stores, with no allocation. CD is in
// the key (rather than CD=1 answers left uncached) because a validating stub sets CD on
// every query and deserves hits too, while an answer fetched with validation disabled must
// never reach a client that relies on the upstream's validation (RFC 4035 §3.2.2).
//
// Concurrency: every method is thread-safe; one Cache is shared by all serving threads.
// Entries are indexed by up to 64 shards by key hash, each with its own mutex, held on a
// hit only to copy the bytes out; a hit takes no other lock and writes only its shard's
// first cache line (the mutex and the hit count), and its entry only when the entry
// changes (the first hits after insertion or after the hand passed): on many cores a hot
// entry is then read by every core rather than pulled from core to core. Counters live in
// the shards (written under the shard's lock, read lock-free as relaxed atomics) and are
// summed by Stats().
//
// Capacity is exact: the --cache-size slots form one pool shared by every shard (a free
// list under its own mutex, taken on insertion only), and a shard's index grows and shrinks
// with the entries it holds. So nothing is evicted while any slot is free, and a working
// set no larger than --cache-size stays whole, however the hash spreads it (dnsmasq's
// behaviour). Bytes are bounded too: the answers held (allocation sizes plus a fixed
// allocator overhead each) never exceed --cache-bytes, and an answer over
// --cache-entry-max-bytes is not cached (limit cache_entry_too_large). An evicted or
// replaced entry's allocation is freed, not kept for the slot's next entry.
//
// Eviction is CLOCK (second chance) over the whole pool: one hand, under its own mutex,
// goes round the slots in order, and the entry it removes is the coldest of the cache, not
// of one shard. (A hand per shard made each shard evict its own newest entries whenever it
// drew more of a new working set than it held of the old one, pass after pass, while other
// shards kept stale entries.) A hit only sets a bit in its entry, where LRU would relink a
// list on every hit (a write to shared list heads under contention); CLOCK approximates LRU
// well for DNS popularity skew. The hand runs only when an insertion finds the pool empty
// or the bytes spent, and locks the shard of each slot it looks at; the slot it frees is
// just behind it, so the new entry is the last it will see. It takes expired entries first;
// only entries removed before their expiry count as evictions (dnsmasq's "live freed"),
// and those removed for bytes are hits of limit cache_bytes.
//
// So the first pass of a new working set W, no larger than the cache, evicts exactly what
// W needs beyond the free slots, none of W's own entries, and later passes evict nothing:
// W's entries lie behind the hand, which reaches them only after every older entry. From
// several threads too; two threads inserting the same key at once take two slots for it
// and give the spare back to the pool. The one exception: a slot freed ahead of the hand
// (an entry dropped after its stale time by Find, or by a flush) goes to the next new
// entry, which the hand may then reach before that entry's first hit; each such slot can
// cost one extra eviction and miss, once.
//
// Expired entries stay (RFC 8767) for stale_max_s more seconds, for LookupStale when every
// upstream failed. A hit in the last 10% of an entry's lifetime, after enough hits, asks
// the caller once to refresh the entry in the background (prefetch).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "common/base/atomic_budget.h"
#include "common/base/clock.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/types.h"
#include "frontend-cache/cached_response.h"

namespace kdns::frontend {

// --cache-bytes: 32 MiB, a third of the frontend-cache container's 100Mi limit (see
// docs/operators.md, "Limits").
inline constexpr size_t kDefaultCacheBytes = size_t{32} << 20;
// --cache-entry-max-bytes: an answer of about 1000 A records; larger ones are forwarded
// every time rather than crowding out hundreds of ordinary answers.
inline constexpr size_t kDefaultCacheEntryMaxBytes = 16384;

struct CacheOptions {
  size_t capacity = 150;                                // --cache-size; 0 disables the cache
  size_t max_bytes = kDefaultCacheBytes;                // --cache-bytes
  size_t max_entry_bytes = kDefaultCacheEntryMaxBytes;  // --cache-entry-max-bytes (reply size)
  CachePolicy policy;
  uint32_t stale_max_s = 86400;  // --stale-max; 0 drops entries at expiry
  bool prefetch = true;
  uint32_t prefetch_min_hits = 2;  // hits (this one included) before a prefetch is asked for
  size_t shard_count = 0;          // 0: chosen from capacity; else rounded up to a power of 2
};

// The key of a query, computed once per query and kept for Insert on a miss.
class CacheKey {
 public:
  static CacheKey FromQuery(const dns::Query& query);

  const dns::Name& name() const { return name_; }  // lower-cased
  dns::RrType type() const { return type_; }
  dns::RrClass cls() const { return class_; }
  bool dnssec_ok() const { return dnssec_ok_; }
  bool checking_disabled() const { return checking_disabled_; }  // the query's CD bit
  uint64_t hash() const { return hash_; }

 private:
  explicit CacheKey(const dns::Query& query);

  dns::Name name_;
  dns::RrType type_;
  dns::RrClass class_;
  bool dnssec_ok_;
  bool checking_disabled_;
  uint64_t hash_;
};

enum class LookupStatus : uint8_t {
  kMiss,   // not cached, or expired: forward the query
  kHit,    // `size` bytes of reply written
  kStale,  // an expired entry served with TTL 30 (LookupStale only)
};

struct LookupResult {
  LookupStatus status = LookupStatus::kMiss;
  size_t size = 0;        // reply bytes written into the caller's buffer
  bool prefetch = false;  // refresh this entry from upstream in the background (asked once)
  bool negative = false;  // the reply is NXDOMAIN or NODATA
};

enum class InsertResult : uint8_t {
  kInserted,
  kDisabled,      // capacity 0
  kNotCacheable,  // see the Cacheability in `reason`
  kNoRoom,        // other insertions in flight hold the byte budget or every slot: try again
                  // next time
};

struct InsertOutcome {
  InsertResult result = InsertResult::kDisabled;
  Cacheability reason = Cacheability::kCacheable;
};

struct CacheStats {
  uint64_t hits = 0;        // fresh answers served
  uint64_t misses = 0;      // lookups that found nothing fresh
  uint64_t stale_hits = 0;  // answers served stale
  uint64_t insertions = 0;
  uint64_t evictions = 0;       // entries removed before their expiry to make room
  uint64_t prefetches = 0;      // prefetch requests handed out
  uint64_t size = 0;            // entries held now (fresh or kept for serving stale)
  uint64_t capacity = 0;        // --cache-size
  uint64_t bytes = 0;           // what the entries' answers take now (see EntryCostBytes)
  uint64_t capacity_bytes = 0;  // --cache-bytes
};

// What an answer of `reply_bytes` with `ttl_count` TTL fields counts against --cache-bytes:
// its one allocation (the TTL offsets and the bytes) plus the allocator's bookkeeping.
size_t EntryCostBytes(size_t reply_bytes, size_t ttl_count);

class Cache {
 public:
  // `clock` must outlive the cache.
  Cache(const CacheOptions& options, const Clock& clock);
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // Serves a fresh entry for `key` as the reply to `query` into `out` (at most
  // max_size_bytes: the client's UDP limit, or 65535 over TCP). Allocates nothing.
  LookupResult Lookup(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                      size_t max_size_bytes);
  // As Lookup, and when the entry has expired less than stale_max_s ago, serves it with
  // every TTL 30 (RFC 8767 §4). For when every upstream failed; counts no miss.
  LookupResult LookupStale(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                           size_t max_size_bytes);

  // Caches `response`, the upstream's reply to `key`'s question, replacing any entry for
  // the key. Only NOERROR and NXDOMAIN replies, untruncated, with a non-zero lifetime.
  [[nodiscard]] InsertOutcome Insert(const CacheKey& key, std::span<const uint8_t> response);

  // Drops every entry / every entry for `domain` and the names below it (for a routing
  // change on reload). Returns how many entries were dropped; not counted as evictions.
  size_t Flush();
  size_t FlushDomain(const dns::Name& domain);
  // Drops the negative entries (NXDOMAIN and NODATA) for `zone` and the names below it,
  // keeping the positive ones: the zone's records changed (a NOTIFY, or a new SOA serial),
  // so a name that did not exist may now, while one that did keeps its TTL (as it would
  // from any authoritative server). Returns how many; not counted as evictions. Walks the
  // whole cache, under each shard's lock in turn, unless no negative entry is held.
  size_t DropNegative(const dns::Name& zone);
  // Negative entries held now (any zone), fresh or kept for serving stale.
  size_t negatives() const { return negatives_.load(std::memory_order_relaxed); }

  CacheStats Stats() const;
  size_t capacity() const { return capacity_; }
  size_t shard_count() const { return shard_count_; }
  // Entries `shard` indexes now (for tests of the shared slot pool).
  size_t ShardSize(size_t shard) const;

 private:
  struct Entry;
  struct Shard;
  struct StoredAnswer;
  enum class Mode : uint8_t { kFresh, kStale };

  LookupResult Find(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                    size_t max_size_bytes, Mode mode);
  Shard& ShardFor(uint64_t hash) const;
  size_t ShardIndex(uint64_t hash) const;

  // Removes `slot`'s entry from `shard` (locked) and frees its answer; the slot is the
  // caller's to reuse or to give back with FreeSlot.
  void RemoveLocked(Shard& shard, uint32_t slot);
  // CLOCK over the pool (hand_mutex_ held): moves the hand on until it removes the first
  // expired entry, or the first whose second chance is used up (an eviction, counted). The
  // removed slot (-1 when every slot is free or being filled) and whether it was removed
  // before its expiry.
  struct Swept {
    int64_t slot = -1;
    bool live = false;
  };
  Swept SweepLocked(uint64_t now_ms);
  // A slot for a new entry: a free one, else the hand's. None when every slot is being
  // filled by other insertions.
  std::optional<uint32_t> TakeSlot(uint64_t now_ms);
  // Counts `cost` against --cache-bytes, evicting with the hand until it fits.
  [[nodiscard]] bool ReserveBytes(size_t cost, uint64_t now_ms);
  std::optional<uint32_t> TakeFreeSlot();
  void FreeSlot(uint32_t slot);
  // Drops every entry `drop` picks, shard by shard (for Flush and FlushDomain).
  size_t DropWhere(const std::function<bool(const Entry&)>& drop);

  const CacheOptions options_;
  const Clock& clock_;
  size_t capacity_;
  size_t shard_count_ = 0;
  std::unique_ptr<Entry[]> slots_;  // capacity_ of them, shared by every shard
  std::unique_ptr<Shard[]> shards_;
  std::mutex free_mutex_;
  std::vector<uint32_t> free_slots_;  // a stack; under free_mutex_
  // CLOCK's hand: the next slot it looks at. Taken before any shard's mutex, never after.
  std::mutex hand_mutex_;
  size_t hand_ = 0;  // under hand_mutex_
  // EntryCostBytes of every entry and reservation, up to --cache-bytes.
  AtomicBudget bytes_;
  // Entries with Entry::negative set (changed under their shard's lock).
  std::atomic<size_t> negatives_{0};
};

}  // namespace kdns::frontend

// The response cache of frontend-cache: upstream replies kept in wire form, served to
// clients with their own ID, name case and EDNS, and TTLs decremented by the entry's age.
//
// Key: (lower-cased qname, qtype, qclass, DO bit). An entry keeps the reply bytes and the
// offset of every TTL field (cached_response.h), so a hit is one hash probe, a memcpy and
// a few stores, with no allocation.
//
// Concurrency: every method is thread-safe; one Cache is shared by all serving threads.
// Entries are split over up to 64 shards by key hash, each with its own mutex, held on a
// hit only to copy the bytes out. Counters live in the shards (written under the shard's
// lock, read lock-free as relaxed atomics) and are summed by Stats().
//
// Eviction is CLOCK (second chance) per shard: a hit only sets a bit in its entry, where
// LRU would relink a list on every hit (a write to shared list heads under contention) and
// segmented LRU would move entries between segments; CLOCK approximates LRU well for DNS
// popularity skew. The hand takes expired entries first; only entries removed before their
// expiry count as evictions (dnsmasq's "live freed"). Capacity is --cache-size entries in
// total (split evenly over the shards, so one shard may evict while another has room;
// shards are sized to hold at least 32 entries each to keep that effect small).
//
// Expired entries stay (RFC 8767) for stale_max_s more seconds, for LookupStale when every
// upstream failed. A hit in the last 10% of an entry's lifetime, after enough hits, asks
// the caller once to refresh the entry in the background (prefetch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/base/clock.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/types.h"
#include "frontend-cache/cached_response.h"

namespace kdns::frontend {

struct CacheOptions {
  size_t capacity = 150;  // --cache-size; 0 disables the cache
  CachePolicy policy;
  uint32_t stale_max_s = 86400;  // --stale-max; 0 drops entries at expiry
  bool prefetch = true;
  uint32_t prefetch_min_hits = 2;  // hits (this one included) before a prefetch is asked for
  size_t shard_count = 0;          // 0: chosen from capacity; else rounded up to a power of 2
};

// The key of a query, computed once per query and kept for Insert on a miss.
class CacheKey {
 public:
  CacheKey(const dns::Name& qname, dns::RrType qtype, dns::RrClass qclass, bool dnssec_ok);
  static CacheKey FromQuery(const dns::Query& query);

  const dns::Name& name() const { return name_; }  // lower-cased
  dns::RrType type() const { return type_; }
  dns::RrClass cls() const { return class_; }
  bool dnssec_ok() const { return dnssec_ok_; }
  uint64_t hash() const { return hash_; }

 private:
  dns::Name name_;
  dns::RrType type_;
  dns::RrClass class_;
  bool dnssec_ok_;
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
  uint64_t evictions = 0;   // entries removed before their expiry to make room
  uint64_t prefetches = 0;  // prefetch requests handed out
  uint64_t size = 0;        // entries held now (fresh or kept for serving stale)
  uint64_t capacity = 0;
};

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
  // As Lookup, except that a miss is not counted: for a first look whose miss is followed
  // by a Lookup of the same key (the receiver thread's, see FrontendServer).
  LookupResult Peek(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
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

  CacheStats Stats() const;
  size_t capacity() const { return capacity_; }
  size_t shard_count() const { return shard_count_; }

 private:
  struct Shard;
  enum class Mode : uint8_t { kFresh, kPeek, kStale };

  LookupResult Find(const CacheKey& key, const dns::Query& query, std::span<uint8_t> out,
                    size_t max_size_bytes, Mode mode);
  Shard& ShardFor(uint64_t hash) const;

  const CacheOptions options_;
  const Clock& clock_;
  size_t capacity_;
  size_t shard_count_ = 0;
  int shard_shift_ = 0;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace kdns::frontend

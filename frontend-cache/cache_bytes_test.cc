// Tests of the Cache's bytes budget: --cache-bytes never exceeded, --cache-entry-max-bytes, and
// memory given back by evicted or replaced entries.

#include <malloc.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/limits/limits.h"
#include "frontend-cache/cache.h"
#include "frontend-cache/testing.h"

namespace kdns::frontend::testing {
namespace {

using dns::RrType;
using limits::Limit;
using limits::LimitHits;

// A reply of `count` AAAA records (about 28 bytes each).
Reply Big(const std::string& name, int count) {
  Reply big = Answer(name, {}, RrType::kAaaa);
  for (int i = 0; i < count; ++i) {
    big.answers.push_back(name + " 300 IN AAAA 2001:db8::" + std::to_string(i + 1));
  }
  return big;
}

TEST_CASE("The answers held never exceed --cache-bytes", "[frontend][cache]") {
  CacheOptions options;
  options.capacity = 1000;
  options.max_bytes = 16 * 1024;
  CacheFixture f(options);
  const uint64_t hits_before = LimitHits(Limit::kCacheBytes);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(f.Insert(Big("b" + std::to_string(i) + ".example.com.", 20)).result ==
            InsertResult::kInserted);
    REQUIRE(f.cache.Stats().bytes <= options.max_bytes);
    CHECK(f.Get("b" + std::to_string(i) + ".example.com.", RrType::kAaaa));  // the newest stays
  }
  const CacheStats stats = f.cache.Stats();
  CHECK(stats.capacity_bytes == options.max_bytes);
  CHECK(stats.size < 100);
  CHECK(stats.bytes > options.max_bytes / 2);  // the budget is used, not just respected
  CHECK(stats.evictions == 100 - stats.size);
  CHECK(LimitHits(Limit::kCacheBytes) - hits_before == stats.evictions);
  // Evictions for entries (count) are not byte-budget hits.
  CHECK(f.cache.Flush() == stats.size);
  CHECK(f.cache.Stats().bytes == 0);

  SECTION("expired entries make room first, without a limit hit") {
    for (int i = 0; i < 100; ++i) {
      REQUIRE(f.Insert(Big("c" + std::to_string(i) + ".example.com.", 20)).result ==
              InsertResult::kInserted);
      f.clock.AdvanceMs(300'000);
    }
    CHECK(LimitHits(Limit::kCacheBytes) - hits_before == stats.evictions);
  }
}

TEST_CASE("An answer over --cache-entry-max-bytes is not cached", "[frontend][cache]") {
  CacheOptions options;
  options.max_entry_bytes = 512;
  CacheFixture f(options);
  const uint64_t hits_before = LimitHits(Limit::kCacheEntryTooLarge);
  const InsertOutcome outcome = f.Insert(Big("big.example.com.", 40));
  CHECK(outcome.result == InsertResult::kNotCacheable);
  CHECK(outcome.reason == Cacheability::kTooLarge);
  CHECK(LimitHits(Limit::kCacheEntryTooLarge) == hits_before + 1);
  CHECK_FALSE(f.Get("big.example.com.", RrType::kAaaa));
  CHECK(f.cache.Stats().bytes == 0);
  CHECK(f.Insert(Big("small.example.com.", 10)).result == InsertResult::kInserted);
  CHECK(f.Get("small.example.com.", RrType::kAaaa));
}

TEST_CASE("An evicted or replaced entry gives its memory back", "[frontend][cache]") {
  constexpr int kEntries = 200;
  CacheFixture f(OneShard(kEntries));
  auto heap_bytes = [] { return mallinfo2().uordblks; };
  for (int i = 0; i < kEntries; ++i) REQUIRE(f.Insert(Host(i)).result == InsertResult::kInserted);
  const size_t small_bytes = f.cache.Stats().bytes;
  const size_t heap_small = heap_bytes();
  // Each name's answer replaced by one of 100 A records (about 1.6 KiB), then by the small one.
  for (int i = 0; i < kEntries; ++i) {
    const std::string name = "h" + std::to_string(i) + ".example.com.";
    Reply big = Answer(name, {});
    for (int j = 0; j < 100; ++j) {
      big.answers.push_back(name + " 300 IN A 192.0.2." + std::to_string(j + 1));
    }
    REQUIRE(f.Insert(big).result == InsertResult::kInserted);
  }
  const size_t big_bytes = f.cache.Stats().bytes;
  CHECK(big_bytes > small_bytes + kEntries * 1000);
  const size_t heap_big = heap_bytes();
  // mallinfo2 sees glibc's allocator only; a sanitizer's shows no change at all.
  const bool heap_measured = heap_big != heap_small;
  if (heap_measured) CHECK(heap_big > heap_small + kEntries * 1000);  // the count is real
  for (int i = 0; i < kEntries; ++i) REQUIRE(f.Insert(Host(i)).result == InsertResult::kInserted);
  CHECK(f.cache.Stats().bytes == small_bytes);
  // What the big answers took is back with the allocator (a little slack for its own state).
  if (heap_measured) CHECK(heap_bytes() < heap_small + kEntries * 100);

  SECTION("and so does an eviction") {
    for (int i = kEntries; i < 2 * kEntries; ++i) {
      REQUIRE(f.Insert(Host(i)).result == InsertResult::kInserted);
    }
    CHECK(f.cache.Stats().evictions == kEntries);
    // The same answers, for names a digit or two longer.
    CHECK(f.cache.Stats().bytes <= small_bytes + kEntries * 2 * 2);
    CHECK(f.cache.Flush() == kEntries);
    CHECK(f.cache.Stats().bytes == 0);
  }
}

}  // namespace
}  // namespace kdns::frontend::testing

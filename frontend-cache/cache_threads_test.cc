// Tests of the Cache shared by threads: hits from several threads, and exact entry and byte
// counts while threads insert into a full cache.

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "frontend-cache/cache.h"
#include "frontend-cache/testing.h"

namespace kdns::frontend::testing {
namespace {

using dns::RrType;

TEST_CASE("Four threads share the cache's hits", "[frontend][cache]") {
  CacheOptions options;
  options.capacity = 1000;
  CacheFixture f(options);
  constexpr int kNames = 200;
  for (int i = 0; i < kNames; ++i) REQUIRE(f.Insert(Host(i)).result == InsertResult::kInserted);
  std::vector<dns::testing::ParsedQuery> queries;
  queries.reserve(kNames);
  for (int i = 0; i < kNames; ++i) {
    queries.push_back(
        MakeQuery("h" + std::to_string(i) + ".example.com.", RrType::kA, static_cast<uint16_t>(i)));
  }
  constexpr int kThreads = 4;
  constexpr int kRounds = 20;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<uint8_t> out(kUdp);
      for (int round = 0; round < kRounds; ++round) {
        for (const auto& query : queries) {
          LookupResult result =
              f.cache.Lookup(CacheKey::FromQuery(query.query), query.query, out, kUdp);
          const uint16_t id = static_cast<uint16_t>((out[0] << 8) | out[1]);
          if (result.status != LookupStatus::kHit || id != query.query.header.id) ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(f.cache.Stats().hits == uint64_t{kThreads} * kRounds * kNames);
}

TEST_CASE("Threads inserting into a full cache keep the entry and byte counts exact",
          "[frontend][cache]") {
  CacheOptions options;
  options.capacity = 64;
  options.shard_count = 8;
  options.max_bytes = 64 * 100;  // about 50 host answers: both bounds are hit
  CacheFixture f(options);
  constexpr int kThreads = 4;
  constexpr int kNamesPerThread = 1000;
  // Built before the threads start: Catch's assertions (in MakeQuery) are not thread-safe.
  struct Step {
    dns::testing::ParsedQuery shared;  // a name every thread asks and inserts (i % 97)
    std::vector<uint8_t> shared_reply;
    dns::testing::ParsedQuery own;  // a name only this thread inserts
    std::vector<uint8_t> own_reply;
  };
  std::vector<std::vector<Step>> steps(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = t * kNamesPerThread; i < (t + 1) * kNamesPerThread; ++i) {
      steps[t].push_back({MakeQuery("h" + std::to_string(i % 97) + ".example.com.", RrType::kA),
                          MakeReply(Host(i % 97)),
                          MakeQuery("h" + std::to_string(1000 + i) + ".example.com.", RrType::kA),
                          MakeReply(Host(1000 + i))});
    }
  }
  std::atomic<uint64_t> inserted{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> out(kUdp);
      for (const Step& step : steps[t]) {
        const CacheKey key = CacheKey::FromQuery(step.shared.query);
        const LookupResult hit = f.cache.Lookup(key, step.shared.query, out, kUdp);
        if (hit.status == LookupStatus::kHit && (out[0] != 0x12 || out[1] != 0x34)) ++wrong;
        if (hit.status == LookupStatus::kMiss &&
            f.cache.Insert(key, step.shared_reply).result == InsertResult::kInserted) {
          ++inserted;
        }
        if (f.cache.Insert(CacheKey::FromQuery(step.own.query), step.own_reply).result ==
            InsertResult::kInserted) {
          ++inserted;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
  const CacheStats stats = f.cache.Stats();
  CHECK(stats.size <= options.capacity);
  CHECK(stats.bytes <= options.max_bytes);
  CHECK(stats.insertions == inserted);
  size_t per_shard = 0;
  for (size_t shard = 0; shard < f.cache.shard_count(); ++shard) {
    per_shard += f.cache.ShardSize(shard);
  }
  CHECK(per_shard == stats.size);
  CHECK(f.cache.Flush() == stats.size);
  CHECK(f.cache.Stats().bytes == 0);
  // Every slot is back in the pool: a full working set fits again without an eviction.
  const uint64_t evictions = f.cache.Stats().evictions;
  for (int i = 0; i < 50; ++i) REQUIRE(f.Insert(Host(i)).result == InsertResult::kInserted);
  CHECK(f.cache.Stats().evictions == evictions);
  CHECK(f.cache.Stats().size == 50);
}

}  // namespace
}  // namespace kdns::frontend::testing

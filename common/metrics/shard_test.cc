#include "common/metrics/shard.h"

#include <catch2/catch.hpp>
#include <set>
#include <thread>

namespace kdns::metrics {
namespace {

TEST_CASE("a thread keeps its shard", "[metrics]") {
  const size_t shard = ThisThreadShard();
  CHECK(shard < kShards);
  CHECK(ThisThreadShard() == shard);
}

TEST_CASE("threads started one after another get distinct shards", "[metrics]") {
  std::set<size_t> shards;
  for (size_t i = 0; i < kShards; ++i) {
    std::thread([&shards] { shards.insert(ThisThreadShard()); }).join();
  }
  CHECK(shards.size() == kShards);
}

TEST_CASE("a thread that uses another's shard counts there and takes no slot of its own",
          "[metrics]") {
  size_t first = kShards;
  std::thread([&] { first = ThisThreadShard(); }).join();
  size_t paired = kShards;
  std::thread([&] {
    UseShard(first);
    paired = ThisThreadShard();
  }).join();
  CHECK(paired == first);
  // The next thread takes the slot after the first's: the paired one took none.
  size_t next = kShards;
  std::thread([&] { next = ThisThreadShard(); }).join();
  CHECK(next == (first + 1) % kShards);
}

}  // namespace
}  // namespace kdns::metrics

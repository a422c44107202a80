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

}  // namespace
}  // namespace kdns::metrics

#include "common/base/persistent_map.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

namespace kdns {
namespace {

// Sends every key to one of four hashes, so collisions and deep paths are exercised.
struct CollidingHash {
  size_t operator()(int key) const { return static_cast<size_t>(key % 4) * 0x9e3779b97f4a7c15ull; }
};

template <class Map>
std::map<int, int> Contents(const Map& map) {
  std::map<int, int> out;
  map.ForEach([&](int key, int value) { out[key] = value; });
  return out;
}

}  // namespace

TEST_CASE("an empty persistent map finds nothing", "[persistent_map]") {
  PersistentMap<std::string, int> map;
  CHECK(map.empty());
  CHECK(map.Find("a") == nullptr);
  CHECK(map.Erase("a").size() == 0);
}

TEST_CASE("set returns a new map and leaves the old one unchanged", "[persistent_map]") {
  PersistentMap<std::string, int> v0;
  auto v1 = v0.Set("a", 1);
  auto v2 = v1.Set("b", 2).Set("a", 10);
  CHECK(v0.Find("a") == nullptr);
  REQUIRE(v1.Find("a") != nullptr);
  CHECK(*v1.Find("a") == 1);
  CHECK(v1.Find("b") == nullptr);
  CHECK(*v2.Find("a") == 10);
  CHECK(*v2.Find("b") == 2);
  CHECK(v2.size() == 2);
  auto v3 = v2.Erase("a");
  CHECK(v3.Find("a") == nullptr);
  CHECK(v3.size() == 1);
  CHECK(*v2.Find("a") == 10);
}

TEST_CASE("a persistent map behaves like std::map under random updates", "[persistent_map]") {
  auto run = [](auto map_type_tag, int key_range) {
    using Map = decltype(map_type_tag);
    std::mt19937 random(42);
    Map map;
    std::map<int, int> model;
    std::vector<std::pair<Map, std::map<int, int>>> versions;
    for (int step = 0; step < 20000; ++step) {
      int key = static_cast<int>(random() % static_cast<unsigned>(key_range));
      if (random() % 3 == 0) {
        map = map.Erase(key);
        model.erase(key);
      } else {
        int value = static_cast<int>(random());
        map = map.Set(key, value);
        model[key] = value;
      }
      if (step % 2000 == 0) versions.emplace_back(map, model);
    }
    CHECK(map.size() == model.size());
    CHECK(Contents(map) == model);
    for (int key = 0; key < key_range; ++key) {
      const int* found = map.Find(key);
      auto it = model.find(key);
      REQUIRE((found != nullptr) == (it != model.end()));
      if (found != nullptr) REQUIRE(*found == it->second);
    }
    // Old versions still hold exactly what they held when taken.
    for (const auto& [old_map, old_model] : versions) CHECK(Contents(old_map) == old_model);
  };
  SECTION("with a good hash") { run(PersistentMap<int, int>(), 3000); }
  SECTION("with colliding hashes") { run(PersistentMap<int, int, CollidingHash>(), 300); }
}

TEST_CASE("FromEntries builds the same map as repeated Set, last duplicate winning",
          "[persistent_map]") {
  std::vector<std::pair<int, int>> entries;
  std::map<int, int> model;
  std::mt19937 random(7);
  for (int i = 0; i < 5000; ++i) {
    int key = static_cast<int>(random() % 4000);
    entries.emplace_back(key, i);
    model[key] = i;
  }
  auto map = PersistentMap<int, int>::FromEntries(entries);
  CHECK(map.size() == model.size());
  CHECK(Contents(map) == model);
  auto colliding = PersistentMap<int, int, CollidingHash>::FromEntries(entries);
  CHECK(Contents(colliding) == model);
  CHECK(colliding.size() == model.size());
  // And it can be updated like any other map.
  auto updated = map.Set(-1, 1).Erase(entries[0].first);
  CHECK(updated.size() == model.size());
  CHECK(updated.Find(entries[0].first) == nullptr);
}

}  // namespace kdns

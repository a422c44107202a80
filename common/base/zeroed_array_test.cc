#include "common/base/zeroed_array.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/base/resident_testing.h"

namespace kdns {
namespace {

struct Entry {
  std::atomic<uint64_t> a{0};
  uint32_t b = 0;
};

// Pages of `array` the kernel has backed with memory.
template <class T>
long ResidentPages(const ZeroedArray<T>& array) {
  return testing::ResidentPages(array.items().data(), array.items().size_bytes());
}

TEST_CASE("ZeroedArray starts all zero and costs a page of memory once one is written",
          "[zeroed_array]") {
  ZeroedArray<Entry> array(65536);  // 1 MiB
  REQUIRE(array.size() == 65536);
  CHECK(ResidentPages(array) == 0);
  array[0].a.store(7);
  array[65535].b = 9;
  CHECK(ResidentPages(array) == 2);
  CHECK(array[0].a.load() == 7);
  CHECK(array[65535].b == 9);
  CHECK(array[1].b == 0);
  CHECK(array[12345].a.load() == 0);
}

TEST_CASE("ZeroedArray moves its mapping and an empty one maps nothing", "[zeroed_array]") {
  ZeroedArray<Entry> empty(0);
  CHECK(empty.size() == 0);
  ZeroedArray<Entry> array(100);
  array[99].b = 3;
  ZeroedArray<Entry> moved(std::move(array));
  CHECK(moved.size() == 100);
  CHECK(moved[99].b == 3);
  empty = std::move(moved);
  CHECK(empty.size() == 100);
  CHECK(empty[99].b == 3);
}

}  // namespace
}  // namespace kdns

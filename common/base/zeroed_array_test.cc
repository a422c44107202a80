#include "common/base/zeroed_array.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <utility>
#include <vector>

namespace kdns {
namespace {

struct Entry {
  std::atomic<uint64_t> a{0};
  uint32_t b = 0;
};

// Pages of `array` the kernel has backed with memory (mincore).
template <class T>
size_t ResidentPages(const ZeroedArray<T>& array) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = (array.items().size_bytes() + page - 1) / page;
  std::vector<unsigned char> resident(pages);
  void* start = const_cast<T*>(array.items().data());
  REQUIRE(mincore(start, array.items().size_bytes(), resident.data()) == 0);
  size_t count = 0;
  for (unsigned char r : resident) count += r & 1;
  return count;
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

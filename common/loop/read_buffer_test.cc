#include "common/loop/read_buffer.h"

#include <catch2/catch.hpp>
#include <thread>

namespace kdns::loop {
namespace {

TEST_CASE("A thread's read buffer is the same memory on every call", "[loop][read_buffer]") {
  const uv_buf_t first = ThreadReadBuffer(16 * 1024);
  const uv_buf_t again = ThreadReadBuffer(16 * 1024);
  CHECK(first.len == 16 * 1024);
  CHECK(again.base == first.base);
}

TEST_CASE("A read buffer grows for a larger read and serves smaller ones after",
          "[loop][read_buffer]") {
  std::thread([] {
    (void)ThreadReadBuffer(1024);
    const uv_buf_t large = ThreadReadBuffer(64 * 1024);
    CHECK(large.len == 64 * 1024);
    const uv_buf_t small = ThreadReadBuffer(16 * 1024);
    CHECK(small.len == 16 * 1024);
    CHECK(small.base == large.base);
  }).join();
}

TEST_CASE("Each thread reads into its own buffer", "[loop][read_buffer]") {
  const char* mine = ThreadReadBuffer(4096).base;
  const char* theirs = nullptr;
  std::thread([&] { theirs = ThreadReadBuffer(4096).base; }).join();
  CHECK(theirs != mine);
}

}  // namespace
}  // namespace kdns::loop

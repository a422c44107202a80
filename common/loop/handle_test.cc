#include "common/loop/handle.h"

#include <catch2/catch.hpp>
#include <memory>

#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"

namespace kdns::loop {
namespace {

// An owner that wants to hear when its handle is really closed, as TcpConnection does.
struct Owner {
  void Close() { timer.CloseThen<&Owner::timer, &Owner::OnClosed>(); }
  void OnClosed() { ++closed; }
  UvHandle<uv_timer_t> timer;
  int closed = 0;
};

TEST_CASE_METHOD(testing::LoopFixture,
                 "A UvHandle closes its handle when destroyed and frees it in the close callback",
                 "[loop][handle]") {
  UvHandle<uv_timer_t> timer;
  CHECK_FALSE(timer);
  REQUIRE(timer.Open(nullptr, [&](uv_timer_t* h) { return uv_timer_init(loop.get(), h); }) == 0);
  CHECK(timer);
  UvHandle<uv_timer_t> moved = std::move(timer);
  CHECK_FALSE(timer);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  CHECK(moved);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "A failed init leaves the UvHandle empty and nothing to close", "[loop][handle]") {
  UvHandle<uv_timer_t> timer;
  CHECK(timer.Open(nullptr, [](uv_timer_t*) { return UV_EINVAL; }) == UV_EINVAL);
  CHECK_FALSE(timer);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "CloseThen tells the owner once the handle is closed, unless the owner went first",
                 "[loop][handle]") {
  Owner owner;
  REQUIRE(owner.timer.Open(&owner, [&](uv_timer_t* h) { return uv_timer_init(loop.get(), h); }) ==
          0);
  owner.Close();
  CHECK(owner.timer.closing());
  CHECK(owner.closed == 0);  // never from inside the call
  loop.RunNoWait();
  CHECK(owner.closed == 1);
  CHECK_FALSE(owner.timer);

  auto gone = std::make_unique<Owner>();
  REQUIRE(gone->timer.Open(gone.get(),
                           [&](uv_timer_t* h) { return uv_timer_init(loop.get(), h); }) == 0);
  gone->Close();
  gone.reset();  // the close callback finds no owner
  loop.RunNoWait();
}

}  // namespace
}  // namespace kdns::loop

#include "common/loop/udp_receiver_group.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

namespace kdns::loop {
namespace {

TEST_CASE("UdpReceiverGroup lets one thread lead and hands the lead on", "[loop][udp]") {
  UdpReceiverGroup group;
  std::atomic<bool> stop{false};
  REQUIRE(group.Lead(stop));
  std::atomic<bool> follower_led{false};
  std::thread follower([&] { follower_led = group.Lead(stop); });  // waits for the lead
  while (group.followers() == 0) std::this_thread::yield();        // it is waiting in Lead
  CHECK_FALSE(follower_led);
  group.StepDown();
  follower.join();
  CHECK(follower_led);
  // The follower kept the lead: another caller waits until it is stopped.
  std::atomic<bool> stopped{false};
  std::thread waiter([&] { stopped = !group.Lead(stop); });
  while (group.followers() == 0) std::this_thread::yield();  // it is waiting in Lead
  CHECK_FALSE(stopped);
  stop = true;
  group.WakeAll();
  waiter.join();
  CHECK(stopped);
  CHECK_FALSE(group.Lead(stop));  // a stopped caller never leads
}

namespace {

// The calling thread leads; it hands the lead to a follower thread whose first batch holds
// `first_batch` datagrams out of 64. The follower keeps the lead when it ends, and the
// caller (synchronised with it by join) goes on in its place. Returns whether the follower
// would hand on after that batch. (No Catch macros on the follower thread: Catch is not
// thread-safe.)
bool HandOver(UdpReceiverGroup& group, const std::atomic<bool>& stop, size_t first_batch) {
  std::atomic<bool> led{false};
  std::atomic<bool> stepped{false};
  std::thread follower([&] {
    led = group.Lead(stop);
    if (led) stepped = group.ShouldStepDown(first_batch, 64);
  });
  while (group.followers() == 0) std::this_thread::yield();
  group.StepDown();
  follower.join();
  REQUIRE(led);
  return stepped;
}

}  // namespace

TEST_CASE("UdpReceiverGroup hands the lead on after a backlog and learns patience", "[loop][udp]") {
  UdpReceiverGroup group;
  std::atomic<bool> stop{false};
  REQUIRE(group.Lead(stop));
  CHECK(group.patience() == 1);
  CHECK_FALSE(group.ShouldStepDown(63, 64));  // not full: no backlog
  CHECK(group.ShouldStepDown(64, 64));        // full: hand on

  SECTION("a follower that finds less than a batch doubles the patience") {
    uint64_t handovers = group.handovers();
    for (uint32_t expected : {2U, 4U, 8U, 16U, 32U, 64U, 64U}) {
      CHECK_FALSE(HandOver(group, stop, 5));
      CHECK(group.handovers() == ++handovers);
      CHECK(group.patience() == expected);
    }
    // The leader (this thread again, in the follower's place) needs 64 full batches in a
    // row; a partial one starts the count again.
    for (int i = 0; i < 63; ++i) CHECK_FALSE(group.ShouldStepDown(64, 64));
    CHECK_FALSE(group.ShouldStepDown(10, 64));
    for (int i = 0; i < 63; ++i) CHECK_FALSE(group.ShouldStepDown(64, 64));
    CHECK(group.ShouldStepDown(64, 64));
    // A backlog after all: the next follower's full batch makes it 1 again, and it hands
    // on at once.
    CHECK(HandOver(group, stop, 64));
    CHECK(group.patience() == 1);
  }

  SECTION("a hand-over with nobody waiting judges nothing") {
    CHECK_FALSE(HandOver(group, stop, 1));
    CHECK(group.patience() == 2);
    const uint64_t handovers = group.handovers();
    group.StepDown();  // no follower: the leader comes back to the same queue
    REQUIRE(group.Lead(stop));
    CHECK(group.handovers() == handovers);
    CHECK_FALSE(group.ShouldStepDown(1, 64));
    CHECK(group.patience() == 2);
  }
}

}  // namespace
}  // namespace kdns::loop

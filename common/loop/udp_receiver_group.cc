#include "common/loop/udp_receiver_group.h"

#include <algorithm>
#include <utility>

#include "common/base/single_writer.h"

namespace kdns::loop {

bool UdpReceiverGroup::Lead(const std::atomic<bool>& stop) {
  std::unique_lock lock(mutex_);
  ++waiting_;
  followers_.wait(lock, [&] { return !led_ || stop.load(std::memory_order_acquire); });
  --waiting_;
  if (stop.load(std::memory_order_acquire)) return false;
  led_ = true;
  judging_ = std::exchange(judge_next_, false);
  full_streak_ = 0;
  return true;
}

bool UdpReceiverGroup::ShouldStepDown(size_t received, size_t capacity) {
  const bool full = received >= capacity;
  if (judging_) {
    judging_ = false;
    const uint32_t patience = patience_.load(std::memory_order_relaxed);
    patience_.store(full ? 1 : std::min(patience * 2, kMaxPatience), std::memory_order_relaxed);
  }
  if (!full) {
    full_streak_ = 0;
    return false;
  }
  return ++full_streak_ >= patience_.load(std::memory_order_relaxed);
}

void UdpReceiverGroup::StepDown() {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    led_ = false;
    wake = waiting_ > 0;
    judge_next_ = wake;  // with nobody waiting, the leader itself comes back: nothing split
    if (wake) AddSingleWriter(handovers_);
  }
  if (wake) followers_.notify_one();
}

size_t UdpReceiverGroup::followers() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

void UdpReceiverGroup::WakeAll() {
  { std::lock_guard lock(mutex_); }  // a follower between its check and its wait sees it
  followers_.notify_all();
}

}  // namespace kdns::loop

// UdpReceiverGroup: the receiver threads (UdpReceiverThread) of several UdpSockets that
// serve dups of one socket (one receive queue) take turns, leader/followers style: only the
// leader waits for datagrams, and it hands the lead to a waiting follower only when there
// is a backlog. A light load so stays on one thread with batches as large as they get,
// instead of being dealt out datagram by datagram to every thread the kernel wakes in turn
// (each wake-up and system call then serving fewer queries); a heavy one spreads over all
// of them.
//
// A backlog is judged by how the last hand-over went. The leader hands on after `patience`
// full batches in a row; the follower's first batch then tells whether one more batch was
// waiting. If it was (a full batch), patience drops back to 1: the queue outgrows one
// thread. If it was not, the hand-over only split a batch and paid a wake-up for work the
// leader would have read next: patience doubles, up to kMaxPatience. Closed-loop clients
// with fewer queries outstanding than about two batches so keep one thread busy instead of
// two half-busy, while a queue that keeps growing reaches a second thread within
// kMaxPatience batches (4,096 datagrams, a few milliseconds) and every thread soon after.
//
// Ownership: shared (std::shared_ptr in UdpSocket::Options) by the sockets of the group.
// Thread: thread-safe; Lead, ShouldStepDown and StepDown are called by receiver threads,
// WakeAll by a loop thread stopping its receiver.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace kdns::loop {

class UdpReceiverGroup {
 public:
  static constexpr uint32_t kMaxPatience = 64;

  // Blocks until the caller leads, or until `stop` is set (then false).
  bool Lead(const std::atomic<bool>& stop);
  // The leader, after each batch of `received` datagrams out of `capacity`: whether to hand
  // the lead on now (then StepDown).
  bool ShouldStepDown(size_t received, size_t capacity);
  // Gives up the lead, waking one follower.
  void StepDown();
  // Wakes every follower to look at its stop flag.
  void WakeAll();

  // Full batches in a row before the next hand-over; and how many hand-overs woke a
  // follower so far. For tests and statistics; any thread.
  uint32_t patience() const { return patience_.load(std::memory_order_relaxed); }
  uint64_t handovers() const { return handovers_.load(std::memory_order_relaxed); }
  // Threads waiting in Lead.
  size_t followers() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable followers_;
  bool led_ = false;         // guarded by mutex_
  size_t waiting_ = 0;       // followers in Lead; guarded by mutex_
  bool judge_next_ = false;  // the next leader's first batch judges a hand-over; mutex_
  // The leader's own state (leaders follow one another through mutex_).
  bool judging_ = false;
  uint32_t full_streak_ = 0;
  std::atomic<uint32_t> patience_{1};  // written by the leader only
  std::atomic<uint64_t> handovers_{0};
};

}  // namespace kdns::loop

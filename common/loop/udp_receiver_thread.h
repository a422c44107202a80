// UdpReceiverThread: a thread that receives a UdpSocket's datagrams in place of its loop
// (UdpSocket::StartReceiverThread), answers what it can on the spot and hands the rest to
// the loop.
//
// Why: an event loop pays for every datagram batch with a readiness wait (epoll_wait)
// before the recvmmsg; a thread that sleeps in recvmmsg itself does not, and on a loaded
// server that wait is the largest cost per query after the kernel's own UDP path
// (measured: +1 us per query on a fixed-answer responder, see frontend-cache/README.md).
//
// Each turn of the thread's loop (Run) is a sequence of named steps: take the lead (when
// it is one of a UdpReceiverGroup), wait for datagrams, receive a batch (one recvmmsg,
// UdpReceiveBatch), share the lead if there is a backlog, answer on the thread (each
// datagram offered to the FastPath, its reply written in place), send the answers (one
// sendmmsg, UdpSendBatch), and hand off the rest: a bounded queue the loop thread drains
// when woken by a uv_async_t, reaching the socket's ReceiveCallback (or HandoffCallback)
// there. When the loop falls behind, the thread waits for room rather than drop, and what
// arrives meanwhile waits in the socket.
//
// Waiting for the loop: a receiver sleeping in recvmmsg is woken by the next datagram, and
// when its loop runs on the same core (a pinned or CPU-limited server, or simply a busy
// node) that wake-up preempts the loop in the middle of answering the misses handed off
// before. Under a stream of misses that happened for every few datagrams: the receiver
// read batches of about 15 and cost more than the loop saved it. So when a batch hands
// off at least wait_handoffs datagrams (8) and finds the loop busy (it has not yet taken
// the last hand-off, or has not finished what it took), the receiver does not go back to
// the socket but waits until the loop is about to wait for I/O itself (LoopWaiting, from
// the socket's uv_prepare_t), then reads everything that arrived meanwhile in one batch.
// With a group, it hands the lead to a sibling first. Smaller hand-offs (a moderate rate,
// where misses arrive one or two at a time) and hand-offs that wake an idle loop do not
// wait: there, waiting would only add a wake-up (measured: +9% CPU per miss at 20,000
// q/s when every busy hand-off waited). Measured on frontend-cache's miss path at full
// load, both threads on one core: the process's CPU per miss fell by 14%
// (frontend-cache/README.md).
//
// Yielding to the loop (Options::yield_window): a receiver pays for itself only when it
// answers most datagrams. Each one it hands off costs a thread wake-up more than on a loop
// that reads the socket itself (receiver, then loop, then the loop again for the upstream's
// reply: measured 15-20% more CPU per cache miss at 20,000 q/s, 5-20% at full load),
// against about 1 us less per datagram it answers. So over every yield_window datagrams
// it counts what it handed off, and when that reaches yield_handoff_percent, it stops
// reading and tells the loop (yielded(), through the hand-off wake-up), which then polls
// the socket and receives on its own thread, counting what it answers at once; when that
// share is high again, the loop stops polling and calls Resume(). Only for a receiver on
// its own: the dups of a group would all be polled by their loops at once.
//
// What the FastPath learnt about a datagram it declined (a server's parsed query) travels
// with it to the loop in a UdpHandoffNote, so the loop does not work it out again. This
// layer only carries notes; the user subclasses UdpHandoffNote and makes them
// (Calls::make_note): one per batch slot and one per handoff queue slot, swapped between
// the two as datagrams are handed off, so nothing is allocated per datagram once the queue
// has grown. A FastPath that answers reuses the same note for the next datagram.
//
// Memory: what serves declined datagrams (the notes, the batch's list of them, the queue)
// is made at first need and then kept, so a thread that answers everything, or nothing,
// holds none of it: made up front, the notes alone kept 34 KiB resident in each idle
// thread of frontend-cache (docs/operators.md, "Memory per thread").
//
// How it waits and stops follows from who else holds the socket (SocketSharing). A socket
// that is not inherited dies with us: it is made blocking with SO_RCVTIMEO = wake_ms and
// the thread sleeps in recvmmsg (MSG_WAITFORONE). An inherited one outlives us, and a
// thread killed in recvmmsg can take datagrams with it (see Run): the thread reads with
// MSG_DONTWAIT and sleeps in poll when the socket is empty; the socket is left
// non-blocking. A socket that is ours alone is shut down for reading on Stop, which wakes
// the thread at once; one others hold too is not, and the thread sees the stop request
// within wake_ms.
//
// Ownership: the UdpSocket owns its receiver thread, the socket's fd and the uv_async_t
// it signals. Thread: Start, Stop, TakeHandoffs and stats() on the socket's loop thread;
// Run and the FastPath on the receiver thread.
#pragma once

#include <uv.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/base/zeroed_array.h"
#include "common/loop/socket_address.h"
#include "common/loop/socket_util.h"
#include "common/loop/udp_batch.h"
#include "common/loop/udp_receiver_group.h"

namespace kdns::loop {

// State a FastPath leaves with a datagram it declines, for the loop thread (see the header
// comment). Subclassed by the user; written on the receiver thread, read on the loop thread
// after the handoff (the queue's mutex orders the two).
class UdpHandoffNote {
 public:
  virtual ~UdpHandoffNote() = default;
};

class UdpReceiverThread {
 public:
  // Answers `datagram` on the receiver thread: writes the whole reply into `out` and
  // returns its size, or returns 0 to hand the datagram to the loop thread, with `note`
  // (null without Calls::make_note) and what the FastPath wrote into it, or kDropDatagram
  // to drop it here (a rate limit, shedding: what the loop must not spend time on). Runs
  // concurrently
  // with the loop thread, so it may use only thread-safe state; it must not block. An
  // exception counts as 0.
  using FastPath =
      std::function<size_t(std::span<const uint8_t> datagram, const SocketAddress& peer,
                           std::span<uint8_t> out, UdpHandoffNote* note)>;
  // Makes one note; called when the thread starts and as the handoff queue grows.
  using MakeNote = std::function<std::unique_ptr<UdpHandoffNote>()>;
  // Called on the receiver thread before it waits with nothing to answer: when no datagram
  // came for wake_ms, and before it waits for the lead of its group. The FastPath's state
  // lets go of what an idle thread must not keep (SnapshotHolder::Reader::Release). Must
  // not block; an exception is logged and ignored.
  using Idle = std::function<void()>;
  // Called once on the receiver thread before it reads anything (e.g. to count its
  // metrics with its loop's, metrics::UseShard). Optional.
  using OnStart = std::function<void()>;
  // What the thread calls: the FastPath for every datagram, make_note (optional) for the
  // notes it passes the FastPath, and idle (optional).
  struct Calls {
    FastPath fast_path;
    MakeNote make_note;
    Idle idle;
    OnStart on_start;
  };
  // Room for one FastPath reply.
  static constexpr size_t kFastReplyBytes = 4096;
  // What a FastPath returns for a datagram neither answered nor handed off.
  static constexpr size_t kDropDatagram = SIZE_MAX;

  // A datagram handed to the loop thread.
  struct Handoff {
    std::vector<uint8_t> bytes;
    SocketAddress peer;
    UdpReplyContext ctx;
    std::unique_ptr<UdpHandoffNote> note;  // as the FastPath left it; null without make_note
  };

  struct Options {
    int fd = -1;  // the socket's; not owned
    SocketSharing sharing;
    bool choose_source = false;               // wildcard-bound: replies carry their source address
    size_t slot_bytes = 4096;                 // largest datagram received in full
    size_t max_handoff = 1024;                // see UdpSocket::Options
    size_t wait_handoffs = 8;                 // see UdpSocket::Options::receiver_wait_handoffs
    int wake_ms = 50;                         // see UdpSocket::Options::receiver_wake_ms
    std::shared_ptr<UdpReceiverGroup> group;  // null: receives on its own
    uv_async_t* handoff_ready = nullptr;      // sent when the handoff queue fills from empty
    // Yielding to the loop (see the header comment): 0 never yields; ignored with a group.
    size_t yield_window = 0;
    unsigned yield_handoff_percent = 40;
  };

  // Counters; with one writer, the receiver thread (handoff_dropped: Stop, after the join).
  struct Stats {
    uint64_t received = 0;
    uint64_t sent = 0;
    uint64_t truncated = 0;
    uint64_t errors = 0;
    uint64_t fast_answered = 0;
    uint64_t handoff_dropped = 0;
    uint64_t yields = 0;  // times it stopped reading for the loop
  };

  // Prepares the socket for the way the thread waits (see the header comment) and starts
  // the thread. nullptr with *error if the socket cannot be made blocking.
  [[nodiscard]] static std::unique_ptr<UdpReceiverThread> Start(const Options& options, Calls calls,
                                                                std::string* error);
  ~UdpReceiverThread();
  UdpReceiverThread(const UdpReceiverThread&) = delete;
  UdpReceiverThread& operator=(const UdpReceiverThread&) = delete;

  // Stops and joins the thread; what is still queued for the loop is dropped and counted.
  // Idempotent.
  void Stop();
  // The datagrams handed off since the last call, in order; valid until the next call.
  std::span<const Handoff> TakeHandoffs();
  // The loop is about to wait for I/O (UdpSocket calls it from a uv_prepare_t): it is done
  // with every hand-off it took, and a receiver waiting for that goes on.
  void LoopWaiting();
  // The thread stopped reading the socket for the loop to read it (see the header
  // comment); once set, it stays until Resume. Any thread.
  bool yielded() const { return yielded_.load(std::memory_order_acquire); }
  // The loop stopped reading: the thread reads the socket again.
  void Resume();
  Stats stats() const;

 private:
  UdpReceiverThread(const Options& options, Calls calls);

  // The thread's body and its steps, in the order Run takes them.
  void Run();
  bool stopping() const { return stop_.load(std::memory_order_acquire); }
  bool TakeLead();
  void GiveUpLead();
  bool WaitForDatagrams();
  void CallIdle() const;
  int ReceiveBatch();
  void ShareLeadIfBacklog(int received);
  void AnswerOnThread(int received);
  UdpHandoffNote* NextNote();
  size_t CallFastPath(std::span<const uint8_t> datagram, const SocketAddress& peer,
                      std::span<uint8_t> out, UdpHandoffNote* note) const;
  void SendAnswers();
  [[nodiscard]] bool HandOffRest();
  void WaitForLoop();
  bool ShouldYield(int received);
  void YieldToLoop();

  const Options options_;
  const Calls calls_;
  const bool wait_in_poll_;  // inherited: sleep in poll, read with MSG_DONTWAIT
  std::atomic<bool> stop_{false};
  std::thread thread_;

  // The handoff queue: two vectors of slots that keep their buffers. The thread fills
  // `queue_` under the mutex; the loop swaps it with `draining_`.
  std::mutex mutex_;
  std::condition_variable room_;  // the loop took the queue, or stop
  std::vector<Handoff> queue_;    // guarded by mutex_; the first `queued_` slots are live
  size_t queued_ = 0;             // guarded by mutex_
  // Hand-offs counted: made by the receiver, taken by the loop (TakeHandoffs), and finished
  // (the loop reached LoopWaiting after taking them). Guarded by mutex_; the loop thread,
  // their only writer, also reads taken_ and finished_ without it.
  uint64_t handed_off_ = 0;
  uint64_t taken_ = 0;
  uint64_t finished_ = 0;
  bool loop_busy_ = false;                // at the last hand-off; guarded by mutex_
  std::condition_variable loop_waiting_;  // LoopWaiting finished what was taken, or stop
  std::vector<Handoff> draining_;         // the loop thread's
  // Set by the thread (yielding), cleared by the loop (Resume); written under mutex_.
  std::atomic<bool> yielded_{false};
  std::condition_variable resumed_;  // Resume, or stop

  // The receiver thread's own state.
  bool leading_ = false;
  bool poll_next_;
  internal::UdpReceiveBatch receive_;
  internal::UdpSendBatch send_;
  ZeroedArray<uint8_t> replies_;  // kUdpBatchSize * kFastReplyBytes, answers packed
  // The current batch's declined datagrams: the first handoffs_ of declined_, which keeps
  // its slots (grown as batches decline more, up to kUdpBatchSize).
  struct Declined {
    size_t index = 0;  // in receive_
    SocketAddress peer;
    UdpReplyContext ctx;
  };
  size_t handoffs_ = 0;
  std::vector<Declined> declined_;
  // The note of the current batch's handoff h is handoff_notes_[h]: the FastPath writes
  // into the next free one (NextNote), which it keeps while it answers. Null until needed.
  std::array<std::unique_ptr<UdpHandoffNote>, kUdpBatchSize> handoff_notes_;
  // Datagrams received and handed off in the current yield window.
  size_t window_received_ = 0;
  size_t window_handed_off_ = 0;

  // Written by the receiver thread only.
  std::atomic<uint64_t> received_{0};
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> truncated_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> fast_answered_{0};
  std::atomic<uint64_t> handoff_dropped_{0};
  std::atomic<uint64_t> yields_{0};
};

}  // namespace kdns::loop

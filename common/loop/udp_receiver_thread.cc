#include "common/loop/udp_receiver_thread.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <utility>

#include "common/base/single_writer.h"
#include "common/base/thread_name.h"

namespace kdns::loop {
namespace {

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

std::unique_ptr<UdpReceiverThread> UdpReceiverThread::Start(const Options& options, Calls calls,
                                                            std::string* error) {
  if (options.sharing.inherited == Inherited::kNo) {  // sleeps in recvmmsg
    timeval wake{};
    wake.tv_sec = options.wake_ms / 1000;
    wake.tv_usec = static_cast<suseconds_t>(options.wake_ms % 1000) * 1000;
    if (setsockopt(options.fd, SOL_SOCKET, SO_RCVTIMEO, &wake, sizeof(wake)) != 0) {
      *error = internal::ErrnoMessage("SO_RCVTIMEO", errno);
      return nullptr;
    }
    const int flags = fcntl(options.fd, F_GETFL);
    if (flags < 0 || fcntl(options.fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      *error = internal::ErrnoMessage("fcntl O_NONBLOCK", errno);
      return nullptr;
    }
  }
  std::unique_ptr<UdpReceiverThread> receiver(new UdpReceiverThread(options, std::move(calls)));
  receiver->thread_ = std::thread([self = receiver.get()] { self->Run(); });
  return receiver;
}

UdpReceiverThread::UdpReceiverThread(const Options& options, Calls calls)
    : options_(options),
      calls_(std::move(calls)),
      wait_in_poll_(options.sharing.inherited == Inherited::kYes),
      poll_next_(wait_in_poll_),
      receive_(options.slot_bytes),
      // From the kernel: a page becomes resident only once a batch that large has used it.
      replies_(kUdpBatchSize * kFastReplyBytes) {}

UdpReceiverThread::~UdpReceiverThread() { Stop(); }

void UdpReceiverThread::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  if (options_.group != nullptr) options_.group->WakeAll();
  {
    std::lock_guard lock(mutex_);  // a receiver between its check and its wait sees it
  }
  room_.notify_all();
  loop_waiting_.notify_all();
  resumed_.notify_all();
  // A socket that is ours alone: shutting down its read side wakes the thread now. One that
  // others hold too (a parent keeping it for our successor, or sibling threads serving
  // dups of it) must go on serving them: the thread notices within wake_ms.
  if (options_.sharing.inherited == Inherited::kNo &&
      options_.sharing.between_threads == SharedBetweenThreads::kNo) {
    (void)shutdown(options_.fd, SHUT_RD);  // ENOTCONN for UDP, and it still wakes
  }
  thread_.join();
  std::lock_guard lock(mutex_);
  AddSingleWriter(handoff_dropped_, queued_);  // never delivered now
  queued_ = 0;
}

void UdpReceiverThread::LoopWaiting() {
  if (finished_ == taken_) return;  // both written on this thread: no lock needed to look
  {
    std::lock_guard lock(mutex_);
    finished_ = taken_;
  }
  loop_waiting_.notify_one();  // no system call when nobody waits
}

void UdpReceiverThread::Resume() {
  {
    std::lock_guard lock(mutex_);
    yielded_.store(false, std::memory_order_release);
  }
  resumed_.notify_one();
}

std::span<const UdpReceiverThread::Handoff> UdpReceiverThread::TakeHandoffs() {
  size_t count = 0;
  {
    std::lock_guard lock(mutex_);
    std::swap(queue_, draining_);
    count = queued_;
    queued_ = 0;
    taken_ = handed_off_;
  }
  room_.notify_one();
  return {draining_.data(), count};
}

UdpReceiverThread::Stats UdpReceiverThread::stats() const {
  Stats stats;
  stats.received = LoadRelaxed(received_);
  stats.sent = LoadRelaxed(sent_);
  stats.truncated = LoadRelaxed(truncated_);
  stats.errors = LoadRelaxed(errors_);
  stats.fast_answered = LoadRelaxed(fast_answered_);
  stats.handoff_dropped = LoadRelaxed(handoff_dropped_);
  stats.yields = LoadRelaxed(yields_);
  return stats;
}

// An inherited socket outlives us (the nanny keeps it for the next child), so its datagrams
// must stay in the socket until we can answer them. A thread asleep in recvmmsg does not
// ensure that: woken by a SIGKILL, it first looks for datagrams that arrived meanwhile,
// takes them, and dies with them (measured: 0.3-0.6 queries lost per kill -9 at 8,000
// q/s, against 0-0.1 on the loop). So it reads with a non-blocking recvmmsg, and only
// when that finds nothing, it sleeps in poll, which only reports. Under load the socket
// is rarely empty and the poll rarely needed. A socket bound here dies with us, queue and
// all (also when dups of it are shared between our threads): it sleeps in recvmmsg, a
// system call less per wake-up.
void UdpReceiverThread::Run() {
  SetThreadName("dns-receiver");
  if (calls_.on_start) calls_.on_start();
  while (!stopping()) {
    if (!TakeLead()) break;
    if (poll_next_ && !WaitForDatagrams()) continue;  // look at the stop flag
    const int received = ReceiveBatch();
    if (stopping()) break;
    if (received <= 0) continue;
    ShareLeadIfBacklog(received);
    AnswerOnThread(received);
    SendAnswers();
    if (handoffs_ > 0) {
      if (!HandOffRest()) break;
      WaitForLoop();
    }
    if (ShouldYield(received)) YieldToLoop();
  }
  GiveUpLead();  // to a sibling that is still serving
}

// With a group, only the leader reads the socket.
bool UdpReceiverThread::TakeLead() {
  if (options_.group == nullptr || leading_) return true;
  CallIdle();  // a follower may wait long for the lead
  if (!options_.group->Lead(stop_)) return false;
  leading_ = true;
  return true;
}

void UdpReceiverThread::GiveUpLead() {
  if (!leading_) return;
  options_.group->StepDown();
  leading_ = false;
}

// Inherited socket, found empty: sleeps in poll (which takes nothing) for up to wake_ms.
// False on the timeout or EINTR.
bool UdpReceiverThread::WaitForDatagrams() {
  pollfd ready{.fd = options_.fd, .events = POLLIN, .revents = 0};
  const int result = poll(&ready, 1, options_.wake_ms);
  if (result == 0) CallIdle();  // nothing for wake_ms
  return result > 0;
}

void UdpReceiverThread::CallIdle() const {
  if (!calls_.idle) return;
  try {
    calls_.idle();
  } catch (const std::exception& e) {
    LOG_EVERY_N(ERROR, 100) << "UdpSocket idle call threw: " << e.what();
  } catch (...) {
    LOG_EVERY_N(ERROR, 100) << "UdpSocket idle call threw a non-std exception";
  }
}

// One recvmmsg. Blocking: waits for the first datagram (up to SO_RCVTIMEO), then takes what
// is queued. The number received, or 0 when there was nothing (or an error, counted).
int UdpReceiverThread::ReceiveBatch() {
  const int received = receive_.Receive(options_.fd, wait_in_poll_ ? MSG_DONTWAIT : MSG_WAITFORONE);
  if (received >= 0) {
    poll_next_ = false;  // more may be queued
    return received;
  }
  const int err = errno;
  poll_next_ = wait_in_poll_ && WouldBlock(err);
  if (err == EINTR) return 0;
  if (WouldBlock(err)) {
    // Polling: another reader of the socket was first. Blocking: the wake-up timeout, or a
    // sibling on a dup made the file description non-blocking again: undo that.
    if (!wait_in_poll_) {
      const int flags = fcntl(options_.fd, F_GETFL);
      if (flags >= 0 && (flags & O_NONBLOCK) != 0) {
        fcntl(options_.fd, F_SETFL, flags & ~O_NONBLOCK);
      }
      CallIdle();  // nothing for wake_ms (SO_RCVTIMEO)
    }
    return 0;
  }
  AddSingleWriter(errors_);
  LOG_EVERY_N(WARNING, 1000) << "recvmmsg on " << internal::LocalAddressOf(options_.fd).ToString()
                             << ": " << std::strerror(err);
  return 0;
}

// A backlog: a follower reads the next batch while we answer this one.
void UdpReceiverThread::ShareLeadIfBacklog(int received) {
  if (leading_ && options_.group->ShouldStepDown(static_cast<size_t>(received), kUdpBatchSize)) {
    GiveUpLead();
  }
}

// Offers each datagram to the FastPath: its answer joins the send batch, written in place;
// a datagram it declines is noted for HandOffRest, with the note the FastPath wrote. The
// answers are packed one after the other (each may take up to kFastReplyBytes), so a batch
// of small answers keeps a few pages of replies_ resident, not one per answer.
void UdpReceiverThread::AnswerOnThread(int received) {
  handoffs_ = 0;
  size_t answered = 0;
  size_t written = 0;  // bytes of replies_ the batch's answers take
  receive_.ForEachDatagram(
      received,
      [&](size_t index, std::span<const uint8_t> datagram, const SocketAddress& peer,
          const UdpReplyContext& ctx) {
        AddSingleWriter(received_);
        const std::span<uint8_t> out(&replies_[written], kFastReplyBytes);
        const size_t size = CallFastPath(datagram, peer, out, NextNote());
        if (size == kDropDatagram) return true;
        if (size == 0 || size > kFastReplyBytes) {
          if (handoffs_ == declined_.size()) declined_.emplace_back();
          Declined& declined = declined_[handoffs_++];
          declined.index = index;
          declined.peer = peer;
          declined.ctx = ctx;
          return true;
        }
        send_.Add(out.first(size), receive_.peer(index), receive_.peer_length(index),
                  options_.choose_source ? &ctx : nullptr);
        ++answered;
        written += size;
        return true;
      },
      [&] { AddSingleWriter(truncated_); });
  AddSingleWriter(fast_answered_, answered);
}

// The note for the FastPath to write into, made when the batch first needs it (see the
// header: "Memory").
UdpHandoffNote* UdpReceiverThread::NextNote() {
  std::unique_ptr<UdpHandoffNote>& note = handoff_notes_[handoffs_];
  if (note == nullptr && calls_.make_note) note = calls_.make_note();
  return note.get();
}

size_t UdpReceiverThread::CallFastPath(std::span<const uint8_t> datagram, const SocketAddress& peer,
                                       std::span<uint8_t> out, UdpHandoffNote* note) const {
  try {
    return calls_.fast_path(datagram, peer, out, note);
  } catch (const std::exception& e) {
    LOG_EVERY_N(ERROR, 100) << "UdpSocket fast path threw: " << e.what();
  } catch (...) {
    LOG_EVERY_N(ERROR, 100) << "UdpSocket fast path threw a non-std exception";
  }
  return 0;
}

// One sendmmsg for the batch's answers. When the send buffer is full, UDP drops the rest,
// as the kernel would.
void UdpReceiverThread::SendAnswers() {
  if (send_.size() == 0) return;
  const internal::UdpSendResult result = send_.Send(options_.fd);
  AddSingleWriter(sent_, result.sent);
  AddSingleWriter(errors_, result.failed + result.unsent);
}

// Queues the declined datagrams for the loop thread, waking it if the queue was empty. Each
// goes with its note, swapped with the one the queue slot held, which serves a later batch.
// When the loop falls behind (a burst of misses into a cold cache after a restart, say),
// waits for it rather than drop. What is not read meanwhile waits in the socket, whose
// buffer is far larger, as it would for a server without a receiver thread; a sibling
// takes the lead and reads on for its own loop. False when stopping: the loop takes no
// more.
bool UdpReceiverThread::HandOffRest() {
  const auto has_room = [&] { return queued_ == 0 || queued_ + handoffs_ <= options_.max_handoff; };
  bool wake = false;
  {
    std::unique_lock lock(mutex_);
    if (!has_room()) {
      GiveUpLead();
      room_.wait(lock, [&] { return has_room() || stopping(); });
      if (!has_room()) {
        AddSingleWriter(handoff_dropped_, handoffs_);
        return false;
      }
    }
    wake = queued_ == 0;
    loop_busy_ = handoffs_ >= options_.wait_handoffs && (queued_ > 0 || taken_ != finished_);
    ++handed_off_;
    for (size_t h = 0; h < handoffs_; ++h) {
      if (queued_ == queue_.size()) queue_.emplace_back();
      Handoff& slot = queue_[queued_++];
      const Declined& declined = declined_[h];
      const std::span<const uint8_t> bytes = receive_.datagram(declined.index);
      slot.bytes.assign(bytes.begin(), bytes.end());
      slot.peer = declined.peer;
      slot.ctx = declined.ctx;
      std::swap(slot.note, handoff_notes_[h]);
    }
  }
  if (wake) uv_async_send(options_.handoff_ready);
  // A queue slot made just now had no note to give back: NextNote makes one when needed.
  return true;
}

// The loop was busy when this batch was handed off: let it finish before the next receive
// (see the header: "Waiting for the loop").
void UdpReceiverThread::WaitForLoop() {
  std::unique_lock lock(mutex_);
  if (!loop_busy_) return;
  const uint64_t mine = handed_off_;
  if (leading_) {
    lock.unlock();
    GiveUpLead();  // a sibling whose loop is free reads meanwhile
    lock.lock();
  }
  loop_waiting_.wait_for(lock, std::chrono::milliseconds(options_.wake_ms),
                         [&] { return finished_ >= mine || stopping(); });
}

// Counts the window's datagrams; at its end, whether the thread handed off enough of them
// to leave the socket to the loop (see the header: "Yielding to the loop").
bool UdpReceiverThread::ShouldYield(int received) {
  if (options_.yield_window == 0 || options_.group != nullptr) return false;
  window_received_ += static_cast<size_t>(received);
  window_handed_off_ += handoffs_;
  if (window_received_ < options_.yield_window) return false;
  const bool yield = window_handed_off_ * 100 >= window_received_ * options_.yield_handoff_percent;
  window_received_ = 0;
  window_handed_off_ = 0;
  return yield;
}

// Stops reading, wakes the loop to read in its place, and sleeps until it gives the socket
// back (Resume) or the thread stops.
void UdpReceiverThread::YieldToLoop() {
  {
    std::lock_guard lock(mutex_);
    yielded_.store(true, std::memory_order_release);
  }
  AddSingleWriter(yields_);
  uv_async_send(options_.handoff_ready);
  CallIdle();  // asleep for as long as the misses last
  std::unique_lock lock(mutex_);
  resumed_.wait(lock, [&] { return !yielded_.load(std::memory_order_relaxed) || stopping(); });
}

}  // namespace kdns::loop

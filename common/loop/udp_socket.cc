#include "common/loop/udp_socket.h"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace kdns::loop {
namespace {

// Largest UDP payload over IPv4 (65535 - 8 - 20).
constexpr size_t kMaxUdpPayloadBytes = 65507;

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

UdpSocket::Options Clamped(UdpSocket::Options options) {
  options.max_datagram_bytes = std::clamp<size_t>(options.max_datagram_bytes, 512, 65535);
  options.max_pending_sends = std::max<size_t>(options.max_pending_sends, 1);
  options.receiver_wake_ms = std::max(options.receiver_wake_ms, 1);  // 0 would never wake
  return options;
}

void SetBufferSize(int fd, int option, int bytes, const char* name) {
  if (bytes <= 0) return;
  if (setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof(bytes)) != 0) {
    LOG(WARNING) << "UDP " << name << "=" << bytes << ": " << std::strerror(errno);
  }
}

}  // namespace

std::unique_ptr<UdpSocket> UdpSocket::Bind(Loop& loop, const SocketAddress& address,
                                           const Options& options, ReceiveCallback callback,
                                           std::string* error) {
  int fd = internal::CreateBoundSocket(SOCK_DGRAM, address, options.reuse_port, error);
  if (fd < 0) return nullptr;
  std::unique_ptr<UdpSocket> socket(new UdpSocket(loop, fd, options, std::move(callback)));
  if (!socket->Init(error)) return nullptr;  // the destructor closes fd
  return socket;
}

std::unique_ptr<UdpSocket> UdpSocket::FromFd(Loop& loop, int fd, SocketSharing sharing,
                                             const Options& options, ReceiveCallback callback,
                                             std::string* error) {
  if (!internal::PrepareSocketFd(fd, SOCK_DGRAM, error)) {
    close(fd);
    return nullptr;
  }
  std::unique_ptr<UdpSocket> socket(new UdpSocket(loop, fd, options, std::move(callback)));
  socket->sharing_ = sharing;
  if (!socket->Init(error)) return nullptr;  // the destructor closes fd
  return socket;
}

UdpSocket::UdpSocket(Loop& loop, int fd, const Options& options, ReceiveCallback callback)
    : loop_(loop),
      fd_(fd),
      options_(Clamped(options)),
      callback_(std::move(callback)),
      receive_(options_.max_datagram_bytes) {}

bool UdpSocket::Init(std::string* error) {
  SocketAddress local = internal::LocalAddressOf(fd_);
  wildcard_ = local.IsWildcard();
  int one = 1;
  // Ask for each datagram's destination address, which a reply must come from; only a
  // wildcard socket needs it (one bound to an address replies from it anyway), and it
  // costs a control message per datagram. A v6 socket that is not V6ONLY (an inherited one)
  // also receives v4 datagrams, which report it through IP_PKTINFO.
  if (!wildcard_) {
    // nothing to ask for
  } else if (local.is_v6()) {
    if (setsockopt(fd_, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) != 0) {
      *error = internal::ErrnoMessage("IPV6_RECVPKTINFO", errno);
      return false;
    }
    int v6only = 1;
    socklen_t len = sizeof(v6only);
    if (getsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 && v6only == 0) {
      setsockopt(fd_, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
    }
  } else if (setsockopt(fd_, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) != 0) {
    *error = internal::ErrnoMessage("IP_PKTINFO", errno);
    return false;
  }
  SetBufferSize(fd_, SO_RCVBUF, options_.receive_buffer_bytes, "SO_RCVBUF");
  SetBufferSize(fd_, SO_SNDBUF, options_.send_buffer_bytes, "SO_SNDBUF");

  // One std::function call per readiness event (up to kMaxBatchesPerWakeup batches), not
  // per datagram.
  watch_ = FdWatch::Open(
      loop_, fd_, [this](int ready, int status) { OnReady(ready, status); }, error);
  if (watch_ == nullptr) return false;
  CHECK_EQ(check_.Open(this, [&](uv_check_t* h) { return uv_check_init(loop_.get(), h); }), 0);
  CHECK_EQ(idle_.Open(this, [&](uv_idle_t* h) { return uv_idle_init(loop_.get(), h); }), 0);
  UpdatePollEvents();
  return true;
}

UdpSocket::~UdpSocket() {
  StopReceiverThread();
  // Replies queued for a flush in a loop iteration that will not come: those a server's
  // handler sends as it is destroyed after its loop stopped (kubedns's and frontend-cache's
  // CancelAll answers every waiting client SERVFAIL then) would die with the fd. One pass
  // now; what would block is dropped with the socket.
  Flush();
  idle_.Reset();
  check_.Reset();
  // The FdWatch does not own the fd; closing it right after is safe because uv_close has
  // already removed the poll handle from epoll.
  watch_.reset();
  if (fd_ >= 0) close(fd_);
}

SocketAddress UdpSocket::GetLocalAddress() const { return internal::LocalAddressOf(fd_); }

void UdpSocket::PauseReceiving() {
  receiving_ = false;
  UpdatePollEvents();
}

void UdpSocket::ResumeReceiving() {
  receiving_ = true;
  UpdatePollEvents();
  if (handoff_async_) uv_async_send(handoff_async_.get());  // deliver what queued
}

UdpSocket::Stats UdpSocket::stats() const {
  Stats stats = stats_;
  if (receiver_ != nullptr) {
    const UdpReceiverThread::Stats r = receiver_->stats();
    stats.received += r.received;
    stats.sent += r.sent;
    stats.truncated += r.truncated;
    stats.errors += r.errors;
    stats.fast_answered += r.fast_answered;
    stats.handoff_dropped += r.handoff_dropped;
    stats.receiver_yields += r.yields;
  }
  return stats;
}

bool UdpSocket::StartReceiverThread(ReceiverThreadCalls calls, std::string* error) {
  if (receiver_ != nullptr) {
    *error = "the receiver thread is already running";
    return false;
  }
  CHECK_EQ(handoff_async_.Open(
               this, [&](uv_async_t* h) { return uv_async_init(loop_.get(), h, &OnHandoff); }),
           0);
  UdpReceiverThread::Options options;
  options.fd = fd_;
  options.sharing = sharing_;
  options.choose_source = wildcard_;
  options.slot_bytes = options_.max_datagram_bytes;
  options.max_handoff = options_.max_handoff;
  options.wake_ms = options_.receiver_wake_ms;
  options.wait_handoffs = options_.receiver_wait_handoffs;
  options.group = options_.receiver_group;
  options.handoff_ready = handoff_async_.get();
  options.yield_window = options_.receiver_group == nullptr ? options_.receiver_yield_window : 0;
  options.yield_handoff_percent = options_.receiver_yield_handoff_percent;
  receiver_ = UdpReceiverThread::Start(options,
                                       {std::move(calls.fast_path), std::move(calls.make_note),
                                        std::move(calls.idle), std::move(calls.on_start)},
                                       error);
  if (receiver_ == nullptr) {
    handoff_async_.Reset();
    return false;
  }
  on_handoff_ = std::move(calls.on_handoff);
  CHECK_EQ(loop_waits_.Open(this, [&](uv_prepare_t* h) { return uv_prepare_init(loop_.get(), h); }),
           0);
  uv_prepare_start(loop_waits_.get(), &OnLoopWaits);
  uv_unref(reinterpret_cast<uv_handle_t*>(loop_waits_.get()));
  UpdatePollEvents();  // the loop no longer polls for datagrams
  return true;
}

void UdpSocket::StopReceiverThread() {
  if (receiver_ == nullptr || !handoff_async_) return;
  receiver_->Stop();
  handoff_async_.Reset();
  loop_waits_.Reset();
  loop_reads_ = false;  // nothing is received after a stop
  UpdatePollEvents();
}

void UdpSocket::OnLoopWaits(uv_prepare_t* handle) noexcept {
  auto* self = static_cast<UdpSocket*>(handle->data);
  if (self != nullptr && self->receiver_ != nullptr) self->receiver_->LoopWaiting();
}

void UdpSocket::OnHandoff(uv_async_t* handle) noexcept {
  auto* self = static_cast<UdpSocket*>(handle->data);
  if (self != nullptr) self->DeliverHandoff();
}

void UdpSocket::DeliverHandoff() {
  if (receiver_ == nullptr || !receiving_) return;
  const std::span<const UdpReceiverThread::Handoff> handoffs = receiver_->TakeHandoffs();
  in_batch_ = true;
  internal::DeathWatch::Scope scope(death_watch_);
  for (const UdpReceiverThread::Handoff& item : handoffs) {
    internal::CallUser("UdpSocket receive", [&] {
      if (on_handoff_) {
        on_handoff_(item.bytes, item.peer, item.ctx, item.note.get());
      } else {
        callback_(item.bytes, item.peer, item.ctx);
      }
    });
    if (scope.dead()) return;
  }
  in_batch_ = false;
  Flush();
  if (!loop_reads_ && receiver_->yielded()) StartLoopReading();
}

void UdpSocket::StartLoopReading() {
  loop_reads_ = true;
  window_received_ = 0;
  window_answered_ = 0;
  UpdatePollEvents();
}

// At the end of a window the loop read: gives the socket back to the receiver thread when
// the loop answered enough of it at once (cache hits, local answers), which the receiver
// would have answered without waking the loop.
void UdpSocket::MaybeResumeReceiver() {
  if (window_received_ < options_.receiver_yield_window) return;
  const bool resume =
      window_answered_ * 100 >= window_received_ * options_.receiver_resume_answered_percent;
  window_received_ = 0;
  window_answered_ = 0;
  if (!resume) return;
  loop_reads_ = false;
  UpdatePollEvents();
  ++stats_.receiver_resumes;
  receiver_->Resume();
}

void UdpSocket::UpdatePollEvents() {
  const bool poll_readable = receiving_ && (receiver_ == nullptr || loop_reads_);
  const int events =
      (poll_readable ? FdWatch::kReadable : 0) | (waiting_writable_ ? FdWatch::kWritable : 0);
  if (events != watch_->interest()) watch_->SetInterest(events);
}

void UdpSocket::OnReady(int ready, int status) {
  if (status < 0) {
    ++stats_.errors;
    LOG_EVERY_N(WARNING, 1000) << "UDP poll on " << GetLocalAddress().ToString() << ": "
                               << uv_strerror(status);
    return;
  }
  if ((ready & FdWatch::kWritable) != 0) {
    waiting_writable_ = false;
    UpdatePollEvents();
    Flush();
  }
  if ((ready & FdWatch::kReadable) != 0 && receiving_) {
    if (!ReceiveBatches()) return;
  }
}

bool UdpSocket::ReceiveBatches() {
  for (int batch = 0; batch < kMaxBatchesPerWakeup && receiving_; ++batch) {
    const int n = receive_.Receive(fd_, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (!WouldBlock(errno)) {
        // ICMP errors (ECONNREFUSED) surface here for a client socket: not fatal.
        ++stats_.errors;
        LOG_EVERY_N(WARNING, 1000)
            << "recvmmsg on " << GetLocalAddress().ToString() << ": " << std::strerror(errno);
      }
      break;
    }
    in_batch_ = true;
    const uint64_t sends_before = batch_sends_;
    // Stops early, touching nothing, when the callback destroyed this socket.
    const bool alive = receive_.ForEachDatagram(
        n,
        [this](size_t, std::span<const uint8_t> datagram, const SocketAddress& peer,
               const ReplyContext& ctx) {
          ++stats_.received;
          internal::DeathWatch::Scope scope(death_watch_);
          internal::CallUser("UdpSocket receive", [&] { callback_(datagram, peer, ctx); });
          return !scope.dead();
        },
        [this] { ++stats_.truncated; });
    if (!alive) return false;
    in_batch_ = false;
    if (loop_reads_) {
      window_received_ += static_cast<uint64_t>(n);
      window_answered_ += batch_sends_ - sends_before;
    }
    Flush();
    if (static_cast<size_t>(n) < kBatchSize) break;  // drained
  }
  if (loop_reads_) MaybeResumeReceiver();
  return true;
}

bool UdpSocket::Send(std::span<const uint8_t> bytes, const SocketAddress& to,
                     const ReplyContext& ctx) {
  if (bytes.size() > kMaxUdpPayloadBytes || (!to.is_v4() && !to.is_v6())) {
    ++stats_.errors;
    return false;
  }
  if (pending_count_ == options_.max_pending_sends) {
    ++stats_.dropped;
    return false;
  }
  if (pending_count_ == pending_.size()) {
    // Grow the ring (up to max_pending_sends), unrolling it so that head is at 0. Made at
    // the first send, not at start: a socket of an idle thread holds no slots.
    std::rotate(pending_.begin(), pending_.begin() + pending_head_, pending_.end());
    pending_head_ = 0;
    const size_t grown = pending_.empty() ? kBatchSize : pending_.size() * 2;
    pending_.resize(std::min(options_.max_pending_sends, grown));
  }
  if (in_batch_) ++batch_sends_;
  Pending& slot = pending_[(pending_head_ + pending_count_) % pending_.size()];
  slot.bytes.assign(bytes.begin(), bytes.end());
  slot.to = to;
  slot.ctx = ctx;
  ++pending_count_;
  if (!in_batch_ && !waiting_writable_ && !flush_scheduled_) {
    flush_scheduled_ = true;
    uv_check_start(check_.get(), &UdpSocket::OnCheck);
    uv_idle_start(idle_.get(), &UdpSocket::OnIdle);
  }
  return true;
}

void UdpSocket::OnCheck(uv_check_t* handle) noexcept {
  auto* self = static_cast<UdpSocket*>(handle->data);
  if (self != nullptr) self->Flush();
}

void UdpSocket::OnIdle(uv_idle_t* handle) noexcept {
  auto* self = static_cast<UdpSocket*>(handle->data);
  if (self != nullptr) self->Flush();
}

void UdpSocket::Flush() {
  if (flush_scheduled_) {
    flush_scheduled_ = false;
    uv_check_stop(check_.get());
    uv_idle_stop(idle_.get());
  }
  while (pending_count_ > 0) {
    const size_t n = std::min(pending_count_, kBatchSize);
    for (size_t i = 0; i < n; ++i) {
      const Pending& p = pending_[(pending_head_ + i) % pending_.size()];
      // Only a wildcard-bound socket needs to choose the source; a socket bound to one
      // address always sends from it.
      send_.Add(p.bytes, p.to.sockaddr_ptr(), p.to.sockaddr_len(), wildcard_ ? &p.ctx : nullptr);
    }
    const internal::UdpSendResult result = send_.Send(fd_);
    stats_.sent += result.sent;
    stats_.errors += result.failed;
    const size_t done = result.sent + result.failed;
    pending_head_ = (pending_head_ + done) % pending_.size();
    pending_count_ -= done;
    if (result.unsent > 0) {
      waiting_writable_ = true;  // OnPoll flushes the rest when the socket drains
      UpdatePollEvents();
      return;
    }
  }
  pending_head_ = 0;
}

}  // namespace kdns::loop

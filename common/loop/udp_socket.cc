#include "common/loop/udp_socket.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "common/base/single_writer.h"

namespace kdns::loop {
namespace {

// Largest UDP payload over IPv4 (65535 - 8 - 20).
constexpr size_t kMaxUdpPayloadBytes = 65507;

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

void SetBufferSize(int fd, int option, int bytes, const char* name) {
  if (bytes <= 0) return;
  if (setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof(bytes)) != 0) {
    LOG(WARNING) << "UDP " << name << "=" << bytes << ": " << std::strerror(errno);
  }
}

}  // namespace

// The receiver thread's state. The handoff queue is two vectors of slots that keep their
// buffers: the thread fills `queue` under the mutex, the loop swaps it with `draining`.
struct UdpSocket::Receiver {
  struct Handoff {
    std::vector<uint8_t> bytes;
    SocketAddress peer;
    ReplyContext ctx;
  };

  FastPath fast_path;
  std::atomic<bool> stop{false};
  std::thread thread;

  std::mutex mutex;
  std::condition_variable room;   // the loop took the queue, or stop
  std::vector<Handoff> queue;     // guarded by mutex; the first `queued` slots are live
  size_t queued = 0;              // guarded by mutex
  std::vector<Handoff> draining;  // the loop thread's

  // Written by the receiver thread only.
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> truncated{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> fast_answered{0};
  std::atomic<uint64_t> handoff_dropped{0};
};

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

void UdpSocket::PrepareReceive(uint8_t* buffer, size_t slot_bytes,
                               std::array<mmsghdr, kBatchSize>& headers,
                               std::array<iovec, kBatchSize>& iovecs,
                               std::array<sockaddr_storage, kBatchSize>& peers,
                               ControlSlots& control) {
  for (size_t i = 0; i < kBatchSize; ++i) {
    iovecs[i] = {buffer + i * slot_bytes, slot_bytes};
    msghdr& hdr = headers[i].msg_hdr;
    hdr.msg_name = &peers[i];
    hdr.msg_namelen = sizeof(sockaddr_storage);
    hdr.msg_iov = &iovecs[i];
    hdr.msg_iovlen = 1;
    hdr.msg_control = control[i].data();
    hdr.msg_controllen = kControlBytes;
    hdr.msg_flags = 0;
  }
}

UdpReplyContext UdpSocket::ContextOf(const msghdr& hdr) {
  ReplyContext ctx;
  for (cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&hdr), c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      ctx.family_ = AF_INET;
      ctx.v4_ = info.ipi_addr;
      ctx.ifindex_ = info.ipi_ifindex;
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof(info));
      ctx.family_ = AF_INET6;
      ctx.v6_ = info.ipi6_addr;
      ctx.ifindex_ = info.ipi6_ifindex;
    }
  }
  return ctx;
}

std::optional<SocketAddress> UdpReplyContext::destination() const {
  if (family_ == AF_INET) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = v4_;
    return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&sin), sizeof(sin));
  }
  if (family_ == AF_INET6) {
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_addr = v6_;
    if (IN6_IS_ADDR_LINKLOCAL(&v6_)) sin6.sin6_scope_id = ifindex_;
    return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&sin6), sizeof(sin6));
  }
  return std::nullopt;
}

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
    : loop_(loop), fd_(fd), options_(options), callback_(std::move(callback)) {
  options_.max_datagram_bytes = std::clamp<size_t>(options_.max_datagram_bytes, 512, 65535);
  options_.max_pending_sends = std::max<size_t>(options_.max_pending_sends, 1);
  options_.receiver_wake_ms = std::max(options_.receiver_wake_ms, 1);  // 0 would never wake
}

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

  receive_buffer_.resize(kBatchSize * options_.max_datagram_bytes);
  pending_.resize(std::min(options_.max_pending_sends, kBatchSize));

  poll_ = internal::NewHandle<uv_poll_t>(this);
  int rc = uv_poll_init_socket(loop_.get(), poll_, fd_);
  if (rc != 0) {
    delete poll_;  // never initialised, so never registered with the loop
    poll_ = nullptr;
    *error = std::string("uv_poll_init_socket: ") + uv_strerror(rc);
    return false;
  }
  check_ = internal::NewHandle<uv_check_t>(this);
  CHECK_EQ(uv_check_init(loop_.get(), check_), 0);
  idle_ = internal::NewHandle<uv_idle_t>(this);
  CHECK_EQ(uv_idle_init(loop_.get(), idle_), 0);
  UpdatePollEvents();
  return true;
}

UdpSocket::~UdpSocket() {
  StopReceiverThread();
  internal::CloseHandle(idle_);
  internal::CloseHandle(check_);
  internal::CloseHandle(poll_);
  // uv_poll_t does not own the fd; closing it right after uv_close is safe because the
  // poll handle has already been removed from epoll by uv_close.
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
  if (handoff_async_ != nullptr) uv_async_send(handoff_async_);  // deliver what queued
}

UdpSocket::Stats UdpSocket::stats() const {
  Stats stats = stats_;
  if (receiver_ != nullptr) {
    const Receiver& r = *receiver_;
    stats.received += LoadRelaxed(r.received);
    stats.sent += LoadRelaxed(r.sent);
    stats.truncated += LoadRelaxed(r.truncated);
    stats.errors += LoadRelaxed(r.errors);
    stats.fast_answered += LoadRelaxed(r.fast_answered);
    stats.handoff_dropped += LoadRelaxed(r.handoff_dropped);
  }
  return stats;
}

bool UdpSocket::StartReceiverThread(FastPath fast_path, std::string* error) {
  if (receiver_ != nullptr) {
    *error = "the receiver thread is already running";
    return false;
  }
  if (sharing_.inherited == Inherited::kNo) {  // sleeps in recvmmsg; see ReceiveOnThread
    timeval wake{};
    wake.tv_sec = options_.receiver_wake_ms / 1000;
    wake.tv_usec = static_cast<suseconds_t>(options_.receiver_wake_ms % 1000) * 1000;
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wake, sizeof(wake)) != 0) {
      *error = internal::ErrnoMessage("SO_RCVTIMEO", errno);
      return false;
    }
    const int flags = fcntl(fd_, F_GETFL);
    if (flags < 0 || fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      *error = internal::ErrnoMessage("fcntl O_NONBLOCK", errno);
      return false;
    }
  }
  handoff_async_ = internal::NewHandle<uv_async_t>(this);
  CHECK_EQ(uv_async_init(loop_.get(), handoff_async_, &UdpSocket::OnHandoff), 0);
  receiver_ = std::make_unique<Receiver>();
  receiver_->fast_path = std::move(fast_path);
  UpdatePollEvents();  // the loop no longer polls for datagrams
  receiver_->thread = std::thread([this] { ReceiveOnThread(); });
  return true;
}

void UdpSocket::StopReceiverThread() {
  if (receiver_ == nullptr || !receiver_->thread.joinable()) return;
  receiver_->stop.store(true, std::memory_order_release);
  if (options_.receiver_group != nullptr) options_.receiver_group->WakeAll();
  {
    std::lock_guard lock(receiver_->mutex);  // a receiver between its check and its wait sees it
  }
  receiver_->room.notify_all();
  // A socket that is ours alone: shutting down its read side wakes the thread now. One that
  // others hold too (a parent keeping it for our successor, or sibling threads serving
  // dups of it) must go on serving them: the thread notices within receiver_wake_ms.
  if (sharing_.inherited == Inherited::kNo &&
      sharing_.between_threads == SharedBetweenThreads::kNo) {
    (void)shutdown(fd_, SHUT_RD);  // ENOTCONN for UDP, and it still wakes
  }
  receiver_->thread.join();
  internal::CloseHandle(handoff_async_);
  handoff_async_ = nullptr;
  std::lock_guard lock(receiver_->mutex);
  AddSingleWriter(receiver_->handoff_dropped, receiver_->queued);  // never delivered now
  receiver_->queued = 0;
}

void UdpSocket::ReceiveOnThread() {
  Receiver& r = *receiver_;
  const size_t slot_bytes = options_.max_datagram_bytes;
  // Uninitialised: a page becomes resident only once a batch that large has used it.
  const auto in = std::make_unique_for_overwrite<uint8_t[]>(kBatchSize * slot_bytes);
  const auto out = std::make_unique_for_overwrite<uint8_t[]>(kBatchSize * kFastReplyBytes);
  std::array<mmsghdr, kBatchSize> in_headers{};
  std::array<iovec, kBatchSize> in_iovecs{};
  std::array<sockaddr_storage, kBatchSize> peers{};
  alignas(cmsghdr) ControlSlots in_control{};
  std::array<mmsghdr, kBatchSize> out_headers{};
  std::array<iovec, kBatchSize> out_iovecs{};
  alignas(cmsghdr) ControlSlots out_control{};
  std::array<SocketAddress, kBatchSize> handoff_peers;
  std::array<ReplyContext, kBatchSize> handoff_contexts;
  std::array<size_t, kBatchSize> handoff_index{};

  UdpReceiverGroup* const group = options_.receiver_group.get();
  // An inherited socket outlives us (the nanny keeps it for the next child), so its datagrams
  // must stay in the socket until we can answer them. A thread asleep in recvmmsg does not
  // ensure that: woken by a SIGKILL, it first looks for datagrams that arrived meanwhile,
  // takes them, and dies with them (measured: 0.3-0.6 queries lost per kill -9 at 8,000
  // q/s, against 0-0.1 on the loop). So it reads with a non-blocking recvmmsg, and only
  // when that finds nothing, it sleeps in poll, which only reports. Under load the socket
  // is rarely empty and the poll rarely needed. A socket bound here dies with us, queue and
  // all (also when dups of it are shared between our threads): it sleeps in recvmmsg, a
  // system call less per wake-up.
  const bool wait_in_poll = sharing_.inherited == Inherited::kYes;
  bool poll_next = wait_in_poll;
  bool leading = false;
  while (!r.stop.load(std::memory_order_acquire)) {
    if (group != nullptr && !leading) {
      if (!group->Lead(r.stop)) break;
      leading = true;
    }
    if (poll_next) {
      pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
      const int polled = poll(&ready, 1, options_.receiver_wake_ms);
      if (polled <= 0) continue;  // the wake-up timeout, or EINTR: look at the stop flag
    }
    PrepareReceive(in.get(), slot_bytes, in_headers, in_iovecs, peers, in_control);
    // Blocking: waits for the first datagram (up to SO_RCVTIMEO), then takes what is queued.
    const int n = recvmmsg(fd_, in_headers.data(), kBatchSize,
                           wait_in_poll ? MSG_DONTWAIT : MSG_WAITFORONE, nullptr);
    if (r.stop.load(std::memory_order_acquire)) break;
    poll_next = wait_in_poll && n < 0 && WouldBlock(errno);  // else more may be queued
    if (leading && n > 0 && group->ShouldStepDown(static_cast<size_t>(n), kBatchSize)) {
      group->StepDown();  // a backlog: a follower reads the next batch while we answer
      leading = false;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) {
        // Polling: another reader of the socket was first. Blocking: the wake-up timeout,
        // or a sibling on a dup made the file description non-blocking again: undo that.
        if (wait_in_poll) continue;
        const int flags = fcntl(fd_, F_GETFL);
        if (flags >= 0 && (flags & O_NONBLOCK) != 0) fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
        continue;
      }
      AddSingleWriter(r.errors);
      LOG_EVERY_N(WARNING, 1000) << "recvmmsg on " << GetLocalAddress().ToString() << ": "
                                 << std::strerror(errno);
      continue;
    }
    size_t replies = 0;
    size_t handoffs = 0;
    for (int i = 0; i < n; ++i) {
      msghdr& hdr = in_headers[i].msg_hdr;
      if ((hdr.msg_flags & MSG_TRUNC) != 0) {
        AddSingleWriter(r.truncated);
        continue;
      }
      auto peer =
          SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(hdr.msg_name), hdr.msg_namelen);
      if (!peer) continue;
      AddSingleWriter(r.received);
      const std::span<const uint8_t> datagram(in.get() + i * slot_bytes, in_headers[i].msg_len);
      const std::span<uint8_t> reply(out.get() + replies * kFastReplyBytes, kFastReplyBytes);
      size_t size = 0;
      try {
        size = r.fast_path(datagram, *peer, reply);
      } catch (const std::exception& e) {
        LOG_EVERY_N(ERROR, 100) << "UdpSocket fast path threw: " << e.what();
      } catch (...) {
        LOG_EVERY_N(ERROR, 100) << "UdpSocket fast path threw a non-std exception";
      }
      const ReplyContext ctx = ContextOf(hdr);
      if (size == 0 || size > kFastReplyBytes) {
        handoff_index[handoffs] = static_cast<size_t>(i);
        handoff_peers[handoffs] = *peer;
        handoff_contexts[handoffs] = ctx;
        ++handoffs;
        continue;
      }
      out_iovecs[replies] = {reply.data(), size};
      msghdr& out_hdr = out_headers[replies].msg_hdr;
      out_hdr = {};
      out_hdr.msg_name = hdr.msg_name;
      out_hdr.msg_namelen = hdr.msg_namelen;
      out_hdr.msg_iov = &out_iovecs[replies];
      out_hdr.msg_iovlen = 1;
      const size_t control_len = FillControl(ctx, out_control[replies].data());
      if (control_len > 0) {
        out_hdr.msg_control = out_control[replies].data();
        out_hdr.msg_controllen = control_len;
      }
      ++replies;
    }
    AddSingleWriter(r.fast_answered, replies);
    for (size_t sent = 0; sent < replies;) {
      const int k = sendmmsg(fd_, out_headers.data() + sent, replies - sent, MSG_DONTWAIT);
      if (k > 0) {
        AddSingleWriter(r.sent, k);
        sent += static_cast<size_t>(k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && !WouldBlock(errno)) {
        // The first datagram failed (an unreachable peer): drop it, go on with the rest.
        AddSingleWriter(r.errors);
        ++sent;
        continue;
      }
      AddSingleWriter(r.errors,
                      replies - sent);  // the send buffer is full: UDP drops, as the kernel would
      break;
    }
    if (handoffs == 0) continue;
    // The loop falls behind (a burst of misses into a cold cache after a restart, say):
    // wait for it rather than drop. What is not read meanwhile waits in the socket, whose
    // buffer is far larger, as it would for a server without a receiver thread; a sibling
    // takes the lead and reads on for its own loop.
    const auto has_room = [&] {
      return r.queued == 0 || r.queued + handoffs <= options_.max_handoff;
    };
    bool wake = false;
    {
      std::unique_lock lock(r.mutex);
      if (!has_room()) {
        if (leading) {
          group->StepDown();
          leading = false;
        }
        r.room.wait(lock, [&] { return has_room() || r.stop.load(std::memory_order_acquire); });
        if (!has_room()) {  // stopping: the loop takes no more
          AddSingleWriter(r.handoff_dropped, handoffs);
          break;
        }
      }
      wake = r.queued == 0;
      for (size_t h = 0; h < handoffs; ++h) {
        if (r.queued == r.queue.size()) r.queue.emplace_back();
        Receiver::Handoff& slot = r.queue[r.queued++];
        const size_t i = handoff_index[h];
        const uint8_t* bytes = in.get() + i * slot_bytes;
        slot.bytes.assign(bytes, bytes + in_headers[i].msg_len);
        slot.peer = handoff_peers[h];
        slot.ctx = handoff_contexts[h];
      }
    }
    if (wake) uv_async_send(handoff_async_);
  }
  if (leading) group->StepDown();  // to a sibling that is still serving
}

void UdpSocket::OnHandoff(uv_async_t* handle) noexcept {
  auto* self = static_cast<UdpSocket*>(handle->data);
  if (self != nullptr) self->DeliverHandoff();
}

void UdpSocket::DeliverHandoff() {
  if (receiver_ == nullptr || !receiving_) return;
  Receiver& r = *receiver_;
  size_t count = 0;
  {
    std::lock_guard lock(r.mutex);
    std::swap(r.queue, r.draining);
    count = r.queued;
    r.queued = 0;
  }
  r.room.notify_one();
  in_batch_ = true;
  internal::DeathWatch::Scope scope(death_watch_);
  for (size_t i = 0; i < count; ++i) {
    const Receiver::Handoff& item = r.draining[i];
    internal::CallUser("UdpSocket receive", [&] { callback_(item.bytes, item.peer, item.ctx); });
    if (scope.dead()) return;
  }
  in_batch_ = false;
  Flush();
}

void UdpSocket::UpdatePollEvents() {
  const bool poll_readable = receiving_ && receiver_ == nullptr;
  int events = (poll_readable ? UV_READABLE : 0) | (waiting_writable_ ? UV_WRITABLE : 0);
  if (events == poll_events_) return;
  poll_events_ = events;
  if (events == 0) {
    uv_poll_stop(poll_);
  } else {
    uv_poll_start(poll_, events, &UdpSocket::OnPoll);
  }
}

void UdpSocket::OnPoll(uv_poll_t* handle, int status, int events) noexcept {
  auto* self = static_cast<UdpSocket*>(handle->data);
  if (self == nullptr) return;
  if (status < 0) {
    ++self->stats_.errors;
    LOG_EVERY_N(WARNING, 1000) << "UDP poll on " << self->GetLocalAddress().ToString() << ": "
                               << uv_strerror(status);
    return;
  }
  if ((events & UV_WRITABLE) != 0) {
    self->waiting_writable_ = false;
    self->UpdatePollEvents();
    self->Flush();
  }
  if ((events & UV_READABLE) != 0 && self->receiving_) {
    if (!self->ReceiveBatches()) return;
  }
}

bool UdpSocket::ReceiveBatches() {
  const size_t slot_bytes = options_.max_datagram_bytes;
  for (int batch = 0; batch < kMaxBatchesPerWakeup && receiving_; ++batch) {
    PrepareReceive(receive_buffer_.data(), slot_bytes, receive_headers_, receive_iovecs_,
                   receive_peers_, receive_control_);
    int n = recvmmsg(fd_, receive_headers_.data(), kBatchSize, MSG_DONTWAIT, nullptr);
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
    internal::DeathWatch::Scope scope(death_watch_);
    for (int i = 0; i < n; ++i) {
      msghdr& hdr = receive_headers_[i].msg_hdr;
      if ((hdr.msg_flags & MSG_TRUNC) != 0) {
        ++stats_.truncated;
        continue;
      }
      auto peer =
          SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(hdr.msg_name), hdr.msg_namelen);
      if (!peer) continue;
      const ReplyContext ctx = ContextOf(hdr);
      ++stats_.received;
      std::span<const uint8_t> datagram(receive_buffer_.data() + i * slot_bytes,
                                        receive_headers_[i].msg_len);
      internal::CallUser("UdpSocket receive", [&] { callback_(datagram, *peer, ctx); });
      if (scope.dead()) return false;
    }
    in_batch_ = false;
    Flush();
    if (static_cast<size_t>(n) < kBatchSize) break;  // drained
  }
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
    // Grow the ring (up to max_pending_sends), unrolling it so that head is at 0.
    std::rotate(pending_.begin(), pending_.begin() + pending_head_, pending_.end());
    pending_head_ = 0;
    pending_.resize(std::min(options_.max_pending_sends, pending_.size() * 2));
  }
  Pending& slot = pending_[(pending_head_ + pending_count_) % pending_.size()];
  slot.bytes.assign(bytes.begin(), bytes.end());
  slot.to = to;
  slot.ctx = ctx;
  ++pending_count_;
  if (!in_batch_ && !waiting_writable_ && !flush_scheduled_) {
    flush_scheduled_ = true;
    uv_check_start(check_, &UdpSocket::OnCheck);
    uv_idle_start(idle_, &UdpSocket::OnIdle);
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

size_t UdpSocket::FillControl(const ReplyContext& ctx, char* control) const {
  // Only a wildcard-bound socket needs to choose the source; a socket bound to one
  // address always sends from it.
  if (!wildcard_ || ctx.family_ == AF_UNSPEC) return 0;
  std::memset(control, 0, kControlBytes);
  auto* c = reinterpret_cast<cmsghdr*>(control);
  if (ctx.family_ == AF_INET) {
    in_pktinfo info{};
    info.ipi_spec_dst = ctx.v4_;  // source address; the route picks the interface
    c->cmsg_level = IPPROTO_IP;
    c->cmsg_type = IP_PKTINFO;
    c->cmsg_len = CMSG_LEN(sizeof(info));
    std::memcpy(CMSG_DATA(c), &info, sizeof(info));
    return CMSG_SPACE(sizeof(info));
  }
  in6_pktinfo info{};
  info.ipi6_addr = ctx.v6_;
  info.ipi6_ifindex = ctx.ifindex_;  // needed for link-local sources
  c->cmsg_level = IPPROTO_IPV6;
  c->cmsg_type = IPV6_PKTINFO;
  c->cmsg_len = CMSG_LEN(sizeof(info));
  std::memcpy(CMSG_DATA(c), &info, sizeof(info));
  return CMSG_SPACE(sizeof(info));
}

void UdpSocket::Flush() {
  if (flush_scheduled_) {
    flush_scheduled_ = false;
    uv_check_stop(check_);
    uv_idle_stop(idle_);
  }
  std::array<mmsghdr, kBatchSize> headers{};
  std::array<iovec, kBatchSize> iovecs{};
  while (pending_count_ > 0) {
    size_t n = std::min(pending_count_, kBatchSize);
    for (size_t i = 0; i < n; ++i) {
      Pending& p = pending_[(pending_head_ + i) % pending_.size()];
      iovecs[i] = {p.bytes.data(), p.bytes.size()};
      msghdr& hdr = headers[i].msg_hdr;
      hdr = {};
      hdr.msg_name = const_cast<sockaddr*>(p.to.sockaddr_ptr());
      hdr.msg_namelen = p.to.sockaddr_len();
      hdr.msg_iov = &iovecs[i];
      hdr.msg_iovlen = 1;
      size_t control_len = FillControl(p.ctx, send_control_[i].data());
      if (control_len > 0) {
        hdr.msg_control = send_control_[i].data();
        hdr.msg_controllen = control_len;
      }
    }
    int sent = sendmmsg(fd_, headers.data(), n, MSG_DONTWAIT);
    size_t done;
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) {
        waiting_writable_ = true;  // OnPoll flushes the rest when the socket drains
        UpdatePollEvents();
        return;
      }
      // The first datagram failed (unreachable network, a source address that went
      // away): drop it and go on with the rest.
      ++stats_.errors;
      const Pending& p = pending_[pending_head_];
      LOG_EVERY_N(WARNING, 1000) << "sendmmsg to " << p.to.ToString() << " from "
                                 << GetLocalAddress().ToString() << ": " << std::strerror(errno);
      done = 1;
    } else if (sent == 0) {
      waiting_writable_ = true;
      UpdatePollEvents();
      return;
    } else {
      stats_.sent += sent;
      done = static_cast<size_t>(sent);
    }
    pending_head_ = (pending_head_ + done) % pending_.size();
    pending_count_ -= done;
  }
  pending_head_ = 0;
}

}  // namespace kdns::loop

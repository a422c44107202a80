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

void SetBufferSize(int fd, int option, int bytes, const char* name) {
  if (bytes <= 0) return;
  if (setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof(bytes)) != 0) {
    LOG(WARNING) << "UDP " << name << "=" << bytes << ": " << std::strerror(errno);
  }
}

}  // namespace

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

std::unique_ptr<UdpSocket> UdpSocket::Adopt(Loop& loop, int fd, const Options& options,
                                            ReceiveCallback callback, std::string* error) {
  if (!internal::PrepareAdoptedSocket(fd, SOCK_DGRAM, error)) {
    close(fd);
    return nullptr;
  }
  std::unique_ptr<UdpSocket> socket(new UdpSocket(loop, fd, options, std::move(callback)));
  if (!socket->Init(error)) return nullptr;  // the destructor closes fd
  return socket;
}

UdpSocket::UdpSocket(Loop& loop, int fd, const Options& options, ReceiveCallback callback)
    : loop_(loop), fd_(fd), options_(options), callback_(std::move(callback)) {
  options_.max_datagram_bytes = std::clamp<size_t>(options_.max_datagram_bytes, 512, 65535);
  options_.max_pending_sends = std::max<size_t>(options_.max_pending_sends, 1);
}

bool UdpSocket::Init(std::string* error) {
  SocketAddress local = internal::LocalAddressOf(fd_);
  wildcard_ = local.IsWildcard();
  int one = 1;
  // Ask for each datagram's destination address, which a reply must come from; only a
  // wildcard socket needs it (one bound to an address replies from it anyway), and it
  // costs a control message per datagram. A v6 socket that is not V6ONLY (an adopted one)
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
}

void UdpSocket::UpdatePollEvents() {
  int events = (receiving_ ? UV_READABLE : 0) | (waiting_writable_ ? UV_WRITABLE : 0);
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
    for (size_t i = 0; i < kBatchSize; ++i) {
      receive_iovecs_[i] = {receive_buffer_.data() + i * slot_bytes, slot_bytes};
      msghdr& hdr = receive_headers_[i].msg_hdr;
      hdr.msg_name = &receive_peers_[i];
      hdr.msg_namelen = sizeof(sockaddr_storage);
      hdr.msg_iov = &receive_iovecs_[i];
      hdr.msg_iovlen = 1;
      hdr.msg_control = receive_control_[i].data();
      hdr.msg_controllen = kControlBytes;
      hdr.msg_flags = 0;
    }
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
      ReplyContext ctx;
      for (cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr; c = CMSG_NXTHDR(&hdr, c)) {
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

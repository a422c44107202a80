#include "common/loop/udp_batch.h"

#include <glog/logging.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/loop/socket_util.h"

namespace kdns::loop {

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

namespace internal {

UdpReceiveBatch::UdpReceiveBatch(size_t slot_bytes, size_t slots)
    : slot_bytes_(slot_bytes),
      slots_(std::clamp<size_t>(slots, 1, kUdpBatchSize)),
      buffer_(slots_ * slot_bytes),
      area_(1) {}

void UdpReceiveBatch::Prepare() {
  Slots& area = area_[0];
  for (size_t i = 0; i < slots_; ++i) {
    area.iovecs[i] = {&buffer_[i * slot_bytes_], slot_bytes_};
    msghdr& hdr = area.headers[i].msg_hdr;
    hdr.msg_name = &area.peers[i];
    hdr.msg_iov = &area.iovecs[i];
    hdr.msg_iovlen = 1;
    hdr.msg_control = area.control[i].data();
  }
  prepared_ = true;
}

int UdpReceiveBatch::Receive(int fd, int flags) {
  if (!prepared_) Prepare();
  // The kernel overwrites the lengths and flags of every slot it fills.
  std::array<mmsghdr, kUdpBatchSize>& headers = area_[0].headers;
  for (size_t i = 0; i < slots_; ++i) {
    msghdr& hdr = headers[i].msg_hdr;
    hdr.msg_namelen = sizeof(sockaddr_storage);
    hdr.msg_controllen = kUdpControlBytes;
    hdr.msg_flags = 0;
  }
  return recvmmsg(fd, headers.data(), static_cast<unsigned>(slots_), flags, nullptr);
}

UdpReplyContext UdpReceiveBatch::ContextOf(const msghdr& hdr) {
  UdpReplyContext ctx;
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

UdpSendBatch::UdpSendBatch() : area_(1) {}

void UdpSendBatch::Add(std::span<const uint8_t> bytes, const sockaddr* to, socklen_t to_length,
                       const UdpReplyContext* source) {
  DCHECK_LT(count_, kUdpBatchSize);
  Slots& slots = area_[0];
  slots.iovecs[count_] = {const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr& hdr = slots.headers[count_].msg_hdr;
  hdr = {};
  hdr.msg_name = const_cast<sockaddr*>(to);
  hdr.msg_namelen = to_length;
  hdr.msg_iov = &slots.iovecs[count_];
  hdr.msg_iovlen = 1;
  if (source != nullptr && source->family_ != AF_UNSPEC) {
    char* control = slots.control[count_].data();
    std::memset(control, 0, kUdpControlBytes);
    auto* c = reinterpret_cast<cmsghdr*>(control);
    if (source->family_ == AF_INET) {
      in_pktinfo info{};
      info.ipi_spec_dst = source->v4_;  // source address; the route picks the interface
      c->cmsg_level = IPPROTO_IP;
      c->cmsg_type = IP_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(info));
      std::memcpy(CMSG_DATA(c), &info, sizeof(info));
      hdr.msg_controllen = CMSG_SPACE(sizeof(info));
    } else {
      in6_pktinfo info{};
      info.ipi6_addr = source->v6_;
      info.ipi6_ifindex = source->ifindex_;  // needed for link-local sources
      c->cmsg_level = IPPROTO_IPV6;
      c->cmsg_type = IPV6_PKTINFO;
      c->cmsg_len = CMSG_LEN(sizeof(info));
      std::memcpy(CMSG_DATA(c), &info, sizeof(info));
      hdr.msg_controllen = CMSG_SPACE(sizeof(info));
    }
    hdr.msg_control = control;
  }
  ++count_;
}

UdpSendResult UdpSendBatch::Send(int fd) {
  UdpSendResult result;
  size_t done = 0;
  while (done < count_) {
    const int k = sendmmsg(fd, area_[0].headers.data() + done, count_ - done, MSG_DONTWAIT);
    if (k > 0) {
      result.sent += static_cast<size_t>(k);
      done += static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k == 0 || errno == EAGAIN || errno == EWOULDBLOCK) {
      result.unsent = count_ - done;  // the send buffer is full
      break;
    }
    // The first datagram failed on its own (an unreachable network, a source address that
    // went away): drop it and go on with the rest.
    const msghdr& hdr = area_[0].headers[done].msg_hdr;
    const auto to =
        SocketAddress::FromSockaddr(static_cast<const sockaddr*>(hdr.msg_name), hdr.msg_namelen);
    const int err = errno;
    LOG_EVERY_N(WARNING, 1000) << "sendmmsg to " << (to ? to->ToString() : "?") << " from "
                               << LocalAddressOf(fd).ToString() << ": " << std::strerror(err);
    ++result.failed;
    ++done;
  }
  count_ = 0;
  return result;
}

}  // namespace internal
}  // namespace kdns::loop

// Datagram batches: the one receive loop and the one send path of UdpSocket, shared by the
// loop thread (UdpSocket) and a receiver thread (UdpReceiverThread), which differ in where
// they run and in what they do with each datagram, not in how they batch it.
//
// UdpReceiveBatch holds kUdpBatchSize receive slots (fewer if asked) with their peer
// addresses and control messages (the upstream client's replies use it too, one batch
// shared by a forwarder's sockets); Receive() fills them with one recvmmsg, and ForEachDatagram()
// walks the datagrams that arrived whole, each with its peer and its UdpReplyContext (the local
// address it was sent to: IP_PKTINFO / IPV6_RECVPKTINFO). UdpSendBatch collects up to
// kUdpBatchSize outgoing datagrams, each with its source address when the socket must
// choose one, and Send() hands them to sendmmsg.
//
// Both allocate only when made: per datagram they fill preallocated headers, and the
// per-datagram visitor is a template argument (inlined, no std::function or virtual call),
// because this is the hottest code of the servers (a cache hit costs a few µs in all).
//
// Memory: a batch's buffers and slots come straight from the kernel (ZeroedArray), so a
// page of them becomes resident only once a batch that large has used it: a receive batch
// that has received keeps its headers (8 KiB) resident, an idle send batch nothing. A DNS thread
// holds three receive batches and two send batches; allocated and zeroed, they kept 74 KiB resident
// in every thread, also in one that never serves a query (docs/operators.md, "Memory per thread").
//
// Ownership and thread: a batch belongs to one thread (the socket's loop thread, or a
// receiver thread) and holds no fd; the caller passes its socket's fd.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "common/base/zeroed_array.h"
#include "common/loop/socket_address.h"

namespace kdns::loop {

// Datagrams moved per recvmmsg / sendmmsg.
inline constexpr size_t kUdpBatchSize = 64;

namespace internal {
class UdpReceiveBatch;
class UdpSendBatch;
}  // namespace internal

// Where a datagram was received: lets a reply leave from the address the client sent
// to. Opaque and copyable; keep it with a query to reply later. A default-constructed
// context lets the kernel choose the source (client use).
class UdpReplyContext {
 public:
  UdpReplyContext() = default;
  // The local address (port 0) the datagram was sent to, when the kernel reported it:
  // only on a wildcard-bound socket (one bound to an address already knows it).
  std::optional<SocketAddress> destination() const;

 private:
  friend class internal::UdpReceiveBatch;
  friend class internal::UdpSendBatch;
  int family_ = AF_UNSPEC;  // AF_INET: v4_ is set; AF_INET6: v6_ and ifindex_
  in_addr v4_{};
  in6_addr v6_{};
  unsigned ifindex_ = 0;
};

namespace internal {

// Per slot: one pktinfo control message of either family.
inline constexpr size_t kUdpControlBytes =
    CMSG_SPACE(sizeof(in6_pktinfo)) + CMSG_SPACE(sizeof(in_pktinfo));

class UdpReceiveBatch {
 public:
  // `slots` (at most kUdpBatchSize) slots of `slot_bytes` each, from the kernel (see
  // "Memory" above).
  explicit UdpReceiveBatch(size_t slot_bytes, size_t slots = kUdpBatchSize);
  UdpReceiveBatch(const UdpReceiveBatch&) = delete;
  UdpReceiveBatch& operator=(const UdpReceiveBatch&) = delete;

  // One recvmmsg of up to slots() datagrams with `flags` (MSG_DONTWAIT, MSG_WAITFORONE).
  // Returns the count, or -1 with errno set. The first call points the headers at the
  // slots: a batch that never receives (the loop's, while a receiver thread reads; a
  // forwarder's before its first query) keeps no page resident.
  int Receive(int fd, int flags);
  size_t slots() const { return slots_; }

  // Calls visit(index, datagram, peer, ctx) for each of the first `count` datagrams of
  // the last batch that arrived whole from an IP peer, in order, and truncated() for each
  // one the kernel cut to the slot size (dropped). `datagram` stays valid until the next
  // Receive. visit returns false to stop at once (it destroyed the batch's owner: nothing
  // of this object is touched after); then ForEachDatagram returns false.
  template <typename Visit, typename Truncated>
  bool ForEachDatagram(int count, Visit&& visit, Truncated&& truncated);

  // The raw peer address of datagram `index`, to send a reply to without conversion.
  const sockaddr* peer(size_t index) const {
    return static_cast<const sockaddr*>(header(index).msg_name);
  }
  socklen_t peer_length(size_t index) const { return header(index).msg_namelen; }
  std::span<const uint8_t> datagram(size_t index) const {
    return {&buffer_[index * slot_bytes_], area_[0].headers[index].msg_len};
  }

 private:
  // The destination address a received datagram's control messages report.
  static UdpReplyContext ContextOf(const msghdr& hdr);
  const msghdr& header(size_t index) const { return area_[0].headers[index].msg_hdr; }
  void Prepare();

  // The first slots_ of each are used. The kernel writes a slot's peer and control
  // messages only when a datagram fills it.
  struct Slots {
    std::array<mmsghdr, kUdpBatchSize> headers;
    std::array<iovec, kUdpBatchSize> iovecs;
    std::array<sockaddr_storage, kUdpBatchSize> peers;
    alignas(cmsghdr) std::array<std::array<char, kUdpControlBytes>, kUdpBatchSize> control;
  };

  const size_t slot_bytes_;
  const size_t slots_;
  ZeroedArray<uint8_t> buffer_;  // slots_ * slot_bytes_
  ZeroedArray<Slots> area_;      // one
  bool prepared_ = false;        // the headers point at the slots (Prepare)
};

// What one UdpSendBatch::Send did with the batch.
struct UdpSendResult {
  size_t sent = 0;    // datagrams the kernel accepted
  size_t failed = 0;  // datagrams that failed on their own (an unreachable peer): dropped
  size_t unsent = 0;  // the rest, left when the socket would block
};

class UdpSendBatch {
 public:
  UdpSendBatch();
  UdpSendBatch(const UdpSendBatch&) = delete;
  UdpSendBatch& operator=(const UdpSendBatch&) = delete;

  size_t size() const { return count_; }
  bool full() const { return count_ == kUdpBatchSize; }
  void Clear() { count_ = 0; }

  // Adds one datagram to `to`. `bytes` and `to` must stay valid until Send. With a
  // `source` context that reports an address, the datagram leaves from it (a wildcard-bound
  // socket answering from the address the client queried); with none, the kernel chooses.
  void Add(std::span<const uint8_t> bytes, const sockaddr* to, socklen_t to_length,
           const UdpReplyContext* source);

  // sendmmsg of the batch with MSG_DONTWAIT, retried on EINTR. A datagram that fails on its
  // own is dropped (counted, logged rate-limited) and the rest go on; when the socket
  // would block, the rest stay unsent. The batch is empty after.
  UdpSendResult Send(int fd);

 private:
  // Add writes every field of a slot that Send reads.
  struct Slots {
    std::array<mmsghdr, kUdpBatchSize> headers;
    std::array<iovec, kUdpBatchSize> iovecs;
    alignas(cmsghdr) std::array<std::array<char, kUdpControlBytes>, kUdpBatchSize> control;
  };

  size_t count_ = 0;
  ZeroedArray<Slots> area_;  // one
};

template <typename Visit, typename Truncated>
bool UdpReceiveBatch::ForEachDatagram(int count, Visit&& visit, Truncated&& truncated) {
  for (int i = 0; i < count; ++i) {
    const msghdr& hdr = header(static_cast<size_t>(i));
    if ((hdr.msg_flags & MSG_TRUNC) != 0) {
      truncated();
      continue;
    }
    const std::optional<SocketAddress> peer =
        SocketAddress::FromSockaddr(static_cast<const sockaddr*>(hdr.msg_name), hdr.msg_namelen);
    if (!peer) continue;
    const UdpReplyContext ctx = ContextOf(hdr);
    if (!visit(static_cast<size_t>(i), datagram(static_cast<size_t>(i)), *peer, ctx)) {
      return false;
    }
  }
  return true;
}

}  // namespace internal
}  // namespace kdns::loop

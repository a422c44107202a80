// UdpSocket: a datagram socket for a DNS server and for the upstream forwarding client.
//
// Built on a non-blocking fd and uv_poll_t rather than uv_udp_t so that it can receive with
// recvmmsg and send with sendmmsg: one system call moves up to kBatchSize datagrams each
// way. A readable event runs up to kMaxBatchesPerWakeup recvmmsg batches (then yields so
// other sockets on the loop get their turn; the poll is level-triggered). Each datagram is
// handed to the ReceiveCallback; replies sent with Send() during a batch are queued and
// flushed with sendmmsg at the end of that batch. Replies sent at other times (an upstream
// answer arriving later, a timeout's SERVFAIL) are flushed in the same loop iteration, so
// they are batched too: after the poll phase by a uv_check_t, or, when sent before it
// (from a timer), by a uv_idle_t, which also keeps the poll phase from blocking. When the socket
// would block, replies wait in a queue bounded by Options::max_pending_sends, the socket polls for
// writability, and replies beyond the bound are dropped and counted: UDP is lossy anyway, and
// memory must stay bounded.
//
// Destination addresses: every datagram comes with a ReplyContext holding the local
// address it was sent to (IP_PKTINFO / IPV6_RECVPKTINFO). Send() with that context sets the
// reply's source address, so a server bound to 0.0.0.0 or :: answers from the address the
// client queried, as clients require.
//
// Buffers: kBatchSize receive slots of Options::max_datagram_bytes each (4096 by default:
// queries are small, and an upstream client advertises an EDNS buffer of at most 4096, so
// no larger reply can arrive). A longer datagram is truncated by the kernel; it is dropped
// and counted in stats().truncated. Queued replies reuse their slots' buffers, so the
// steady state allocates nothing per datagram.
//
// Thread: the loop's thread only, including stats(). The socket owns its fd (also an
// adopted one) and closes it on destruction; the callback may destroy the UdpSocket.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/socket_util.h"

namespace kdns::loop {

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
  friend class UdpSocket;
  int family_ = AF_UNSPEC;  // AF_INET: v4_ is set; AF_INET6: v6_ and ifindex_
  in_addr v4_{};
  in6_addr v6_{};
  unsigned ifindex_ = 0;
};

class UdpSocket {
 public:
  static constexpr size_t kBatchSize = 64;
  static constexpr int kMaxBatchesPerWakeup = 4;

  struct Options {
    ReusePort reuse_port = ReusePort::kNo;
    // SO_RCVBUF / SO_SNDBUF; 0 keeps the system default. The kernel may cap (and doubles)
    // the value; a failure to set it is logged, not fatal.
    int receive_buffer_bytes = 0;
    int send_buffer_bytes = 0;
    // Largest datagram received in full; see the header comment.
    size_t max_datagram_bytes = 4096;
    // Replies held while the socket would block; beyond this they are dropped.
    size_t max_pending_sends = 1024;
  };

  using ReplyContext = UdpReplyContext;

  // Counters; plain members, read them on the loop thread.
  struct Stats {
    uint64_t received = 0;   // datagrams handed to the callback
    uint64_t sent = 0;       // datagrams the kernel accepted
    uint64_t dropped = 0;    // replies dropped because the send queue was full
    uint64_t truncated = 0;  // received datagrams longer than max_datagram_bytes
    uint64_t errors = 0;     // failed receive/send system calls (the datagram is lost)
  };

  // `datagram` is valid only during the call. Send() may be called from inside.
  using ReceiveCallback = std::function<void(std::span<const uint8_t> datagram,
                                             const SocketAddress& peer, const ReplyContext& ctx)>;

  // Binds `address` (port 0 for an ephemeral port). nullptr with *error on failure.
  [[nodiscard]] static std::unique_ptr<UdpSocket> Bind(Loop& loop, const SocketAddress& address,
                                                       const Options& options,
                                                       ReceiveCallback callback,
                                                       std::string* error);
  // Takes ownership of an open, bound UDP socket (inherited from a parent process).
  // reuse_port is ignored (it must be set before bind). nullptr with *error on failure;
  // the fd is consumed (closed) either way.
  [[nodiscard]] static std::unique_ptr<UdpSocket> Adopt(Loop& loop, int fd, const Options& options,
                                                        ReceiveCallback callback,
                                                        std::string* error);
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Queues one datagram to `to`, from ctx's destination address if it has one. Returns
  // false if it was dropped (queue full, or larger than 65507 bytes).
  bool Send(std::span<const uint8_t> bytes, const SocketAddress& to,
            const ReplyContext& ctx = ReplyContext());

  // Stops/resumes delivering datagrams (they queue in the kernel's receive buffer).
  void PauseReceiving();
  void ResumeReceiving();

  SocketAddress GetLocalAddress() const;
  int fd() const { return fd_; }
  const Stats& stats() const { return stats_; }
  size_t pending_sends() const { return pending_count_; }

 private:
  struct Pending {
    std::vector<uint8_t> bytes;
    SocketAddress to;
    ReplyContext ctx;
  };
  // Per receive slot: peer address and control messages (one pktinfo of either family).
  static constexpr size_t kControlBytes =
      CMSG_SPACE(sizeof(in6_pktinfo)) + CMSG_SPACE(sizeof(in_pktinfo));

  UdpSocket(Loop& loop, int fd, const Options& options, ReceiveCallback callback);
  [[nodiscard]] bool Init(std::string* error);
  static void OnPoll(uv_poll_t* handle, int status, int events) noexcept;
  static void OnCheck(uv_check_t* handle) noexcept;
  static void OnIdle(uv_idle_t* handle) noexcept;
  // Returns false if the callback destroyed this socket.
  [[nodiscard]] bool ReceiveBatches();
  void Flush();
  void UpdatePollEvents();
  size_t FillControl(const ReplyContext& ctx, char* control) const;

  Loop& loop_;
  int fd_;
  Options options_;
  ReceiveCallback callback_;
  bool wildcard_ = false;  // bound to 0.0.0.0/::, so replies need an explicit source
  bool receiving_ = true;
  bool in_batch_ = false;
  bool waiting_writable_ = false;
  int poll_events_ = 0;
  uv_poll_t* poll_ = nullptr;
  uv_check_t* check_ = nullptr;
  uv_idle_t* idle_ = nullptr;
  bool flush_scheduled_ = false;
  Stats stats_;

  std::vector<uint8_t> receive_buffer_;  // kBatchSize * max_datagram_bytes
  std::array<mmsghdr, kBatchSize> receive_headers_{};
  std::array<iovec, kBatchSize> receive_iovecs_{};
  std::array<sockaddr_storage, kBatchSize> receive_peers_{};
  alignas(cmsghdr) std::array<std::array<char, kControlBytes>, kBatchSize> receive_control_{};

  // Ring of queued replies; slots keep their buffers' capacity.
  std::vector<Pending> pending_;
  size_t pending_head_ = 0;
  size_t pending_count_ = 0;
  alignas(cmsghdr) std::array<std::array<char, kControlBytes>, kBatchSize> send_control_{};

  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop

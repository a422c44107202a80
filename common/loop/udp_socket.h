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
// Receiver thread (StartReceiverThread, for a server's listening socket). An event loop
// pays for every datagram batch with a readiness wait (epoll_wait) before the recvmmsg;
// a thread that sleeps in recvmmsg itself does not, and on a loaded server that wait is the
// largest cost per query after the kernel's own UDP path (measured: +1 us per query on a
// fixed-answer responder, see frontend-cache/README.md). So the socket can move its
// receiving onto a dedicated thread that loops: recvmmsg (blocking for the first
// datagram, MSG_WAITFORONE), each datagram offered to a FastPath that may answer it on the
// spot, the answers sent with one sendmmsg. Datagrams the FastPath declines are handed to
// the loop thread (a bounded queue and a uv_async_t) and reach the ReceiveCallback there
// as usual, so replies to them go through Send(). A socket bound here becomes blocking
// with a short SO_RCVTIMEO; stopping shuts it down for reading, which wakes the thread at
// once. An inherited socket (Inherited::kYes) outlives us (a parent keeps it for our
// successor): its thread reads with MSG_DONTWAIT and sleeps in poll when the socket is
// empty, since a thread killed in recvmmsg can take datagrams with it (see
// ReceiveOnThread); it is left non-blocking. A socket that others hold too (inherited, or
// SharedBetweenThreads::kYes: dups served by sibling threads) is not shut down, and the
// thread sees a stop request within Options::receiver_wake_ms. Loop-thread sends always
// use MSG_DONTWAIT.
//
// Thread: the loop's thread only, including stats(), except the FastPath. The socket owns
// its fd (also one handed over by FromFd) and closes it on destruction; the callback may
// destroy the UdpSocket.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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

// Receiver threads of several UdpSockets that serve dups of one socket (one receive queue)
// take turns, leader/followers style: only the leader waits for datagrams, and it hands the
// lead to a waiting follower only when there is a backlog. A light load so stays on one
// thread with batches as large as they get, instead of being dealt out datagram by datagram
// to every thread the kernel wakes in turn (each wake-up and system call then serving fewer
// queries); a heavy one spreads over all of them. Thread-safe.
//
// A backlog is judged by how the last hand-over went. The leader hands on after `patience`
// full batches in a row; the follower's first batch then tells whether one more batch was
// waiting. If it was (a full batch), patience drops back to 1: the queue outgrows one
// thread. If it was not, the hand-over only split a batch and paid a wake-up for work the
// leader would have read next: patience doubles, up to kMaxPatience. Closed-loop clients
// with fewer queries outstanding than about two batches so keep one thread busy instead of
// two half-busy, while a queue that keeps growing reaches a second thread within
// kMaxPatience batches (4,096 datagrams, a few milliseconds) and every thread soon after.
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
    // Receiver thread: datagrams waiting for the loop thread. Beyond this the receiver
    // thread waits for the loop, and what arrives meanwhile waits in the socket (an empty
    // queue takes a whole batch, however large).
    size_t max_handoff = 1024;
    // Receiver thread: how often a sleeping receiver looks for a stop request (SO_RCVTIMEO
    // of a blocking recvmmsg, the timeout of an inherited socket's poll).
    int receiver_wake_ms = 50;
    // Receiver thread: the group it takes turns with, when this socket is one of several
    // dups of one socket; null to receive on its own.
    std::shared_ptr<UdpReceiverGroup> receiver_group;
  };

  using ReplyContext = UdpReplyContext;

  // Counters, read on the loop thread. With a receiver thread they include its own.
  struct Stats {
    uint64_t received = 0;         // datagrams handed to the callback or answered by the FastPath
    uint64_t sent = 0;             // datagrams the kernel accepted
    uint64_t dropped = 0;          // replies dropped because the send queue was full
    uint64_t truncated = 0;        // received datagrams longer than max_datagram_bytes
    uint64_t errors = 0;           // failed receive/send system calls (the datagram is lost)
    uint64_t fast_answered = 0;    // datagrams the FastPath answered (receiver thread)
    uint64_t handoff_dropped = 0;  // datagrams read but never handed over (a stop came first)
  };

  // `datagram` is valid only during the call. Send() may be called from inside.
  using ReceiveCallback = std::function<void(std::span<const uint8_t> datagram,
                                             const SocketAddress& peer, const ReplyContext& ctx)>;

  // Answers `datagram` on the receiver thread: writes the whole reply into `out` and
  // returns its size, or returns 0 to hand the datagram to the ReceiveCallback on the loop
  // thread. Runs concurrently with the loop thread, so it may use only thread-safe state;
  // it must not block. An exception counts as 0.
  using FastPath = std::function<size_t(std::span<const uint8_t> datagram,
                                        const SocketAddress& peer, std::span<uint8_t> out)>;
  // Room for one FastPath reply.
  static constexpr size_t kFastReplyBytes = 4096;

  // Binds `address` (port 0 for an ephemeral port). nullptr with *error on failure.
  [[nodiscard]] static std::unique_ptr<UdpSocket> Bind(Loop& loop, const SocketAddress& address,
                                                       const Options& options,
                                                       ReceiveCallback callback,
                                                       std::string* error);
  // Takes ownership of an open, bound UDP socket handed over as an fd (inherited from a
  // parent process, or a dup shared between threads); `sharing` says who else holds it,
  // which decides how a receiver thread waits and stops. reuse_port is ignored (it must
  // be set before bind). nullptr with *error on failure; the fd is consumed (closed)
  // either way.
  [[nodiscard]] static std::unique_ptr<UdpSocket> FromFd(Loop& loop, int fd, SocketSharing sharing,
                                                         const Options& options,
                                                         ReceiveCallback callback,
                                                         std::string* error);
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Queues one datagram to `to`, from ctx's destination address if it has one. Returns
  // false if it was dropped (queue full, or larger than 65507 bytes).
  bool Send(std::span<const uint8_t> bytes, const SocketAddress& to,
            const ReplyContext& ctx = ReplyContext());

  // Stops/resumes delivering datagrams to the callback (they queue in the kernel's
  // receive buffer, or with a receiver thread in the handoff queue, while the FastPath
  // goes on answering).
  void PauseReceiving();
  void ResumeReceiving();

  // Moves receiving from the loop onto a receiver thread (see the header comment), which
  // offers every datagram to `fast_path` first. False with *error if a socket bound here
  // cannot be made blocking. Once; the thread runs until StopReceiverThread or destruction.
  [[nodiscard]] bool StartReceiverThread(FastPath fast_path, std::string* error);
  // Stops and joins the receiver thread; nothing is received after it (datagrams still in
  // the handoff queue are dropped). Before destroying what the FastPath uses. Idempotent.
  void StopReceiverThread();

  SocketAddress GetLocalAddress() const;
  int fd() const { return fd_; }
  Stats stats() const;
  size_t pending_sends() const { return pending_count_; }

 private:
  struct Pending {
    std::vector<uint8_t> bytes;
    SocketAddress to;
    ReplyContext ctx;
  };
  struct Receiver;
  // Per receive slot: peer address and control messages (one pktinfo of either family).
  static constexpr size_t kControlBytes =
      CMSG_SPACE(sizeof(in6_pktinfo)) + CMSG_SPACE(sizeof(in_pktinfo));
  using ControlSlots = std::array<std::array<char, kControlBytes>, kBatchSize>;

  UdpSocket(Loop& loop, int fd, const Options& options, ReceiveCallback callback);
  [[nodiscard]] bool Init(std::string* error);
  static void OnPoll(uv_poll_t* handle, int status, int events) noexcept;
  static void OnCheck(uv_check_t* handle) noexcept;
  static void OnIdle(uv_idle_t* handle) noexcept;
  static void OnHandoff(uv_async_t* handle) noexcept;
  // Returns false if the callback destroyed this socket.
  [[nodiscard]] bool ReceiveBatches();
  // The receiver thread's body, and the loop thread's delivery of what it handed off.
  void ReceiveOnThread();
  void DeliverHandoff();
  void Flush();
  void UpdatePollEvents();
  size_t FillControl(const ReplyContext& ctx, char* control) const;
  // The destination address a received datagram's control messages report.
  static ReplyContext ContextOf(const msghdr& hdr);
  // Points each header of a recvmmsg batch at its slot of `buffer`, its peer and its
  // control buffer.
  static void PrepareReceive(uint8_t* buffer, size_t slot_bytes,
                             std::array<mmsghdr, kBatchSize>& headers,
                             std::array<iovec, kBatchSize>& iovecs,
                             std::array<sockaddr_storage, kBatchSize>& peers,
                             ControlSlots& control);

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
  SocketSharing sharing_;  // Bind: ours alone
  Stats stats_;
  std::unique_ptr<Receiver> receiver_;
  uv_async_t* handoff_async_ = nullptr;

  std::vector<uint8_t> receive_buffer_;  // kBatchSize * max_datagram_bytes
  std::array<mmsghdr, kBatchSize> receive_headers_{};
  std::array<iovec, kBatchSize> receive_iovecs_{};
  std::array<sockaddr_storage, kBatchSize> receive_peers_{};
  alignas(cmsghdr) ControlSlots receive_control_{};

  // Ring of queued replies; slots keep their buffers' capacity.
  std::vector<Pending> pending_;
  size_t pending_head_ = 0;
  size_t pending_count_ = 0;
  alignas(cmsghdr) ControlSlots send_control_{};

  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop

// UdpSocket: a datagram socket for a DNS server and for the upstream forwarding client.
//
// Built on a non-blocking fd watched by an FdWatch (a uv_poll_t) rather than uv_udp_t so that it
// can receive with recvmmsg and send with sendmmsg: one system call moves up to kBatchSize
// datagrams each way. A readable event runs up to kMaxBatchesPerWakeup recvmmsg batches (then
// yields so other sockets on the loop get their turn; the poll is level-triggered). Each datagram
// is handed to the ReceiveCallback; replies sent with Send() during a batch are queued and flushed
// with sendmmsg at the end of that batch. Replies sent at other times (an upstream answer arriving
// later, a timeout's SERVFAIL) are flushed in the same loop iteration, so they are batched too:
// after the poll phase by a uv_check_t, or, when sent before it (from a timer), by a uv_idle_t,
// which also keeps the poll phase from blocking. When the socket would block, replies wait in a
// queue bounded by Options::max_pending_sends, the socket polls for writability, and replies beyond
// the bound are dropped and counted: UDP is lossy anyway, and memory must stay bounded.
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
// Receiver thread (StartReceiverThread, for a server's listening socket): receiving moves
// from the loop onto a UdpReceiverThread, which answers what its FastPath can and hands
// the rest to the loop thread, where they reach the HandoffCallback (with what the
// FastPath noted about them) or else the ReceiveCallback, so replies to them go through
// Send(). With Options::receiver_yield_window, a receiver that hands off most datagrams
// leaves the socket to the loop (which then receives into the ReceiveCallback) until the
// loop answers most of them at once. How that thread waits and stops depends on who else holds
// the socket (SocketSharing, given to FromFd; a socket from Bind is ours alone): see
// udp_receiver_thread.h. Loop-thread sends always use MSG_DONTWAIT. The loop and the
// receiver thread receive and send through the same batches (udp_batch.h).
//
// Thread: the loop's thread only, including stats(), except the FastPath. The socket owns
// its fd (also one handed over by FromFd) and closes it on destruction; the callback may
// destroy the UdpSocket.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/loop/fd_watch.h"
#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/socket_util.h"
#include "common/loop/udp_batch.h"
#include "common/loop/udp_receiver_group.h"
#include "common/loop/udp_receiver_thread.h"

namespace kdns::loop {

class UdpSocket {
 public:
  static constexpr size_t kBatchSize = kUdpBatchSize;
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
    // Receiver thread: a batch that hands off at least this many datagrams to a loop still
    // busy with earlier ones makes the receiver wait for the loop (see udp_receiver_thread.h,
    // "Waiting for the loop"). Smaller batches mean a light load, where waiting would only
    // add a wake-up.
    size_t receiver_wait_handoffs = 8;
    // Receiver thread: over every receiver_yield_window datagrams (0: never), a receiver
    // that handed off at least receiver_yield_handoff_percent of them leaves the socket to
    // the loop, which gives it back once it answered at least
    // receiver_resume_answered_percent of a window at once (udp_receiver_thread.h,
    // "Yielding to the loop"). Not with a receiver_group.
    size_t receiver_yield_window = 0;
    unsigned receiver_yield_handoff_percent = 40;
    unsigned receiver_resume_answered_percent = 85;
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
    uint64_t received = 0;          // datagrams handed to the callback or answered by the FastPath
    uint64_t sent = 0;              // datagrams the kernel accepted
    uint64_t dropped = 0;           // replies dropped because the send queue was full
    uint64_t truncated = 0;         // received datagrams longer than max_datagram_bytes
    uint64_t errors = 0;            // failed receive/send system calls (the datagram is lost)
    uint64_t fast_answered = 0;     // datagrams the FastPath answered (receiver thread)
    uint64_t handoff_dropped = 0;   // datagrams read but never handed over (a stop came first)
    uint64_t receiver_yields = 0;   // times the receiver thread left the socket to the loop
    uint64_t receiver_resumes = 0;  // times the loop gave it back
  };

  // `datagram` is valid only during the call. Send() may be called from inside.
  using ReceiveCallback = std::function<void(std::span<const uint8_t> datagram,
                                             const SocketAddress& peer, const ReplyContext& ctx)>;

  // Answers datagrams on the receiver thread; see UdpReceiverThread::FastPath.
  using FastPath = UdpReceiverThread::FastPath;
  // A datagram the FastPath declined, delivered on the loop thread with the note it left
  // (null without make_note); `datagram` and `note` are valid only during the call. Send()
  // may be called from inside.
  using HandoffCallback =
      std::function<void(std::span<const uint8_t> datagram, const SocketAddress& peer,
                         const ReplyContext& ctx, UdpHandoffNote* note)>;
  // What a receiver thread calls (UdpReceiverThread::Calls), and what the loop calls for
  // the datagrams it hands off: on_handoff, or when null the ReceiveCallback.
  struct ReceiverThreadCalls {
    FastPath fast_path;
    UdpReceiverThread::MakeNote make_note;
    UdpReceiverThread::Idle idle;
    UdpReceiverThread::OnStart on_start;
    HandoffCallback on_handoff;
  };
  static constexpr size_t kFastReplyBytes = UdpReceiverThread::kFastReplyBytes;

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
  // offers every datagram to calls.fast_path first. False with *error if a socket bound
  // here cannot be made blocking. Once; the thread runs until StopReceiverThread or
  // destruction.
  [[nodiscard]] bool StartReceiverThread(ReceiverThreadCalls calls, std::string* error);
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

  UdpSocket(Loop& loop, int fd, const Options& options, ReceiveCallback callback);
  [[nodiscard]] bool Init(std::string* error);
  // The FdWatch's callback: the socket is readable or writable (or polling failed).
  void OnReady(int ready, int status);
  static void OnCheck(uv_check_t* handle) noexcept;
  static void OnIdle(uv_idle_t* handle) noexcept;
  static void OnHandoff(uv_async_t* handle) noexcept;
  static void OnLoopWaits(uv_prepare_t* handle) noexcept;
  // Returns false if the callback destroyed this socket.
  [[nodiscard]] bool ReceiveBatches();
  // The loop thread's delivery of what the receiver thread handed off.
  void DeliverHandoff();
  // Yielding to the loop: the loop reads the socket while the receiver sleeps, and gives it
  // back when it answers most datagrams at once.
  void StartLoopReading();
  void MaybeResumeReceiver();
  void Flush();
  void UpdatePollEvents();

  Loop& loop_;
  int fd_;
  const Options options_;
  ReceiveCallback callback_;
  HandoffCallback on_handoff_;  // with a receiver thread; null: callback_ takes handoffs
  bool wildcard_ = false;       // bound to 0.0.0.0/::, so replies need an explicit source
  bool receiving_ = true;
  bool in_batch_ = false;
  bool waiting_writable_ = false;
  std::unique_ptr<FdWatch> watch_;  // the socket's own fd, for the loop-side receive and send
  UvHandle<uv_check_t> check_;
  UvHandle<uv_idle_t> idle_;
  bool flush_scheduled_ = false;
  SocketSharing sharing_;  // Bind: ours alone
  Stats stats_;
  std::unique_ptr<UdpReceiverThread> receiver_;
  UvHandle<uv_async_t> handoff_async_;  // the receiver thread's wake-up of the loop
  UvHandle<uv_prepare_t> loop_waits_;   // tells the receiver thread the loop is done
  bool loop_reads_ = false;             // the receiver thread yielded the socket to the loop
  uint64_t window_received_ = 0;        // datagrams the loop read in the current window
  uint64_t window_answered_ = 0;        // and answered while their batch was being received
  uint64_t batch_sends_ = 0;            // Send()s from inside a receive callback

  internal::UdpReceiveBatch receive_;  // kBatchSize slots of max_datagram_bytes
  internal::UdpSendBatch send_;

  // Ring of queued replies; slots keep their buffers' capacity.
  std::vector<Pending> pending_;
  size_t pending_head_ = 0;
  size_t pending_count_ = 0;

  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop

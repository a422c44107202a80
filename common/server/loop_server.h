// LoopServer: DNS over UDP and TCP on one libuv loop. It owns one UdpSocket, one
// TcpListener, the table of open DNS/TCP connections (by id, so late replies find out
// safely that their connection is gone), the thread's 64 KiB response buffer and the
// QueryHandler that the factory made for it. DnsServer runs one per thread, all bound to
// the same address with SO_REUSEPORT (or all on dup()s of inherited sockets); a LoopServer
// can also be used alone on any loop (tests, single-threaded tools).
//
// Every query is admitted (admission.h, with Options::admission) once before the handler
// sees it. With UdpOptions::receiver_thread, the UDP socket receives on a thread of its
// own, which admits each datagram, answers what the handler's AnswerOnReceiverThread can
// answer and hands the rest to this loop with their admission and the handler's Decision
// (a HandedOff, the socket's handoff note), which HandleQuery then gets as they are. The destructor
// stops that thread before anything else. A thread about to wait idle (this loop before it blocks,
// a uv_prepare_t; the receiver thread when no datagram came for receiver_wake_ms) tells the handler
// to let go of its snapshots (QueryHandler::ReleaseSnapshots), so that an idle server does not keep
// replaced state alive.
//
// DNS over TCP is held to TcpOptions' limits: the frame, idle and query timeouts (in
// DnsTcpConnection; at the query timeout the handler answers the connection's waiting
// queries, QueryHandler::OnQueriesOverdue, or the connection is closed), the process-wide
// and per-source connection caps (at the total cap one of this thread's connections of the
// heaviest source is closed for the new one, idle ones first, loop::PickEvictionVictim; when
// this thread holds none that may be closed but another thread may, the new one is let in
// over the cap and the other threads are asked to close one, TcpConnectionCaps::AskForRoom;
// at the per-source cap that source's oldest idle one), and the output bounds. Every hit is
// recorded with limits::RecordLimitHit (common/limits/limits.h).
//
// Every query passes the QueryGate (query_gate.h) on whichever thread receives it: the
// ClientLimiter, admission, the client behind it; every UDP reply, from either thread,
// the ResponseRateLimiter. Every 100 ms each LoopServer tells the ClientLimiter whether its
// receive queue is backing up (SO_MEMINFO: half full, or the kernel dropped datagrams since
// the last look). TCP is bounded by its connection caps.
//
// Counters go to a ThreadStats the caller owns (it outlives the LoopServer, so metrics can
// still be read after shutdown). The UDP socket keeps some counters of its own on the loop
// thread (truncated datagrams, errors); these are mirrored into the ThreadStats on every
// accepted connection and once a second.
//
// Destruction (on the loop thread, never from inside a handler call) destroys the handler
// first, so Responders it holds drop cleanly while the connections still exist; then the
// connections (no callback follows), the listener and the socket. After that the loop has
// no handle of this server left.
//
// Thread: the loop's thread only, except that the ThreadStats may be read from anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/base/zeroed_array.h"
#include "common/loop/dns_tcp_connection.h"
#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/socket_util.h"
#include "common/loop/task_queue.h"
#include "common/loop/tcp_connection.h"
#include "common/loop/tcp_limits.h"
#include "common/loop/tcp_listener.h"
#include "common/loop/timer.h"
#include "common/loop/udp_socket.h"
#include "common/server/admission.h"
#include "common/server/client_limiter.h"
#include "common/server/query_gate.h"
#include "common/server/query_handler.h"
#include "common/server/response_rate_limiter.h"
#include "common/server/stats.h"

namespace kdns::server {

struct UdpOptions {
  // SO_RCVBUF / SO_SNDBUF, 0 for the system default (see loop::UdpSocket::Options).
  int receive_buffer_bytes = 0;
  int send_buffer_bytes = 0;
  // Replies held while the socket would block; beyond this they are dropped.
  size_t max_pending_sends = 1024;
  // Receive on a thread of its own that offers every datagram to the handler's
  // AnswerOnReceiverThread first (loop::UdpSocket::StartReceiverThread).
  bool receiver_thread = false;
  // A receiver that hands off most of a window of this many datagrams leaves the socket to
  // the loop until the loop answers most of them itself (0: never; see
  // loop::UdpSocket::Options::receiver_yield_window). Ignored with a receiver_group.
  size_t receiver_yield_window = 0;
  // The receiver threads serving dups of the same socket take turns (DnsServer sets it).
  std::shared_ptr<loop::UdpReceiverGroup> receiver_group;
};

// DNS over TCP limits (RFC 7766; DESIGN §7). The connection caps and the output budget are
// process-wide: every LoopServer of a process shares `caps` and `output_budget` (DnsServer
// makes them from these numbers when unset; a program with several DnsServers makes them
// once and sets them in each, see MakeTcpCaps/MakeOutputBudget).
struct TcpOptions {
  // RFC 7766 6.2.3: seconds, not minutes. Restarted only by whole messages; runs only while
  // no query is outstanding and no message is arriving.
  uint64_t idle_timeout_ms = 10'000;
  // A message whose first byte arrived must be whole this much later (Knot's
  // tcp-io-timeout), however its bytes trickle in.
  uint64_t frame_timeout_ms = 2'000;
  // A connection with queries outstanding must send a response this long after the query
  // that made it busy, or after its last response; if not, its waiting queries are answered
  // now (SERVFAIL, or stale from frontend-cache's cache) and the slot they held is free. As
  // long as the forwarder's time budget (5 s), so a forwarded query normally ends first; it
  // bounds what the forwarder does not (0: none).
  uint64_t query_timeout_ms = 5'000;
  // Open connections in the whole process, and from one source address (a per-source cap
  // above the total is the total). At the total cap, the serving thread closes a connection
  // of the source holding the most, its idle ones first, even one with a query outstanding
  // for a source that holds at least two fewer (loop::PickEvictionVictim); at the per-source
  // cap, that source's oldest idle connection. With none to close, the new connection is
  // closed at once.
  size_t max_connections = 256;
  size_t max_connections_per_source = 32;
  // Per connection: queries delivered and not yet answered before reading pauses.
  size_t max_outstanding_queries = 32;
  // Output waiting for a client that does not read: per connection, and in total over the
  // process's connections (a per-connection bound above the total is the total). Over
  // either, the connection is closed.
  size_t max_pending_output_bytes = 2 * (65535 + 2);
  size_t max_pending_output_bytes_total = 8 << 20;
  int backlog = 511;
  // Shared by all the servers of a process; made from the numbers above when unset.
  std::shared_ptr<loop::TcpConnectionCaps> caps;
  std::shared_ptr<loop::OutputBudget> output_budget;
};

// One reply of the largest size with its length prefix: the least a connection's output
// bound (and the total) can be, or no large reply could ever be sent.
inline constexpr size_t kMinTcpOutputBytes = 65535 + 2;

// The process-wide objects for `options`' numbers.
std::shared_ptr<loop::TcpConnectionCaps> MakeTcpCaps(const TcpOptions& options);
std::shared_ptr<loop::OutputBudget> MakeOutputBudget(const TcpOptions& options);

class LoopServer {
 public:
  struct Options {
    // Where to bind, when not serving fds. Port 0 picks a port free for both UDP and TCP.
    loop::SocketAddress address;
    loop::ReusePort reuse_port = loop::ReusePort::kNo;
    // Sockets to serve instead of binding (inherited, or dups shared between threads): a
    // bound UDP socket and a bound (possibly listening) TCP socket, both or neither, and
    // who else holds them. Consumed (closed) by Create, also on failure.
    int udp_fd = -1;
    int tcp_fd = -1;
    loop::SocketSharing fd_sharing;
    size_t thread_index = 0;
    UdpOptions udp;
    TcpOptions tcp;
    // What every query is checked for before the handler sees it (admission.h).
    AdmissionPolicy admission;
    // Whose client-address option names the client (admission.h); by default no one's.
    ClientAddressPolicy client_address;
    // Shared by every LoopServer of the process (null: none): the per-client rate limit
    // and fair shedding, checked on UDP before admission (after it, as the client it
    // names, for a trusted forwarder's queries, over TCP too), and the limit of identical
    // responses, checked on every UDP reply.
    std::shared_ptr<ClientLimiter> clients;
    std::shared_ptr<ResponseRateLimiter> responses;
  };

  // What failed in Create.
  enum class Failure { kNone, kHandler, kUdp, kTcp };

  // Makes the handler, then binds (or takes the fds of) the UDP and the TCP socket. nullptr with a
  // one-line *error (and *failure) on failure. `stats` must outlive the LoopServer.
  [[nodiscard]] static std::unique_ptr<LoopServer> Create(loop::Loop& loop, const Options& options,
                                                          const HandlerFactory& factory,
                                                          ThreadStats& stats, std::string* error,
                                                          Failure* failure = nullptr);
  ~LoopServer();
  LoopServer(const LoopServer&) = delete;
  LoopServer& operator=(const LoopServer&) = delete;

  loop::SocketAddress udp_address() const { return udp_->GetLocalAddress(); }
  loop::SocketAddress tcp_address() const { return tcp_->GetLocalAddress(); }
  size_t open_connections() const { return connections_.size(); }
  const ThreadContext& context() const { return context_; }

 private:
  friend class Responder;

  struct Connection {
    std::unique_ptr<loop::DnsTcpConnection> dns;
    loop::TcpConnectionCaps::Slot slot;  // released at close, or when evicted
    IpAddress source;
    uint32_t unanswered = 0;  // delivered, not yet replied to or dropped
    bool dropped = false;     // a query was dropped: close once `unanswered` is 0
    // This thread's idle connections (unanswered == 0), oldest first: an intrusive list, so
    // a query's busy/idle transitions allocate nothing.
    bool idle = false;
    uint64_t idle_order = 0;    // when it became idle last, in MarkIdle calls
    uint64_t opened_order = 0;  // its id: in accept order
    Connection* idle_prev = nullptr;
    Connection* idle_next = nullptr;
  };

  // What the receiver thread hands to the loop with a datagram it did not answer: its
  // admission and the handler's decision (QueryHandler::AnswerOnReceiverThread), so that
  // neither is made twice. One per slot of the socket's handoff, reused.
  struct HandedOff final : loop::UdpHandoffNote {
    // Re-points the admission's EDNS options, which point into the receiver thread's
    // buffer, into `copy`: the same datagram as handed to the loop.
    void MoveTo(std::span<const uint8_t> copy);

    Admission admission;
    Decision decision;
    const uint8_t* admitted_from = nullptr;  // the datagram the receiver admitted
  };

  LoopServer(loop::Loop& loop, const Options& options, ThreadStats& stats);
  // The UDP fast path, on the receiver thread: the gate, then the handler's
  // AnswerOnReceiverThread; 0 hands the datagram (with `note`) to the loop.
  size_t AnswerOnReceiver(std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                          std::span<uint8_t> out, HandedOff& note);
  // A datagram received on the loop: admitted here.
  void OnDatagram(std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                  const loop::UdpReplyContext& reply_context);
  // A datagram the receiver thread admitted and did not answer.
  void OnHandedOff(std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                   const loop::UdpReplyContext& reply_context, HandedOff& note);
  void HandleDatagram(std::span<const uint8_t> datagram, const Admission& admission,
                      const Decision& decision, const loop::SocketAddress& peer,
                      const loop::UdpReplyContext& reply_context);
  void OnAccept(std::unique_ptr<loop::TcpConnection> connection);
  void OnTcpQuery(uint64_t id, std::span<const uint8_t> query);
  void OnTcpClosed(uint64_t id, loop::TcpConnection::CloseReason reason);
  // The query timeout passed on connection `id` (DnsTcpConnection::OverdueCallback).
  void OnTcpOverdue(uint64_t id);
  // Admits a new connection from `source` under the caps, closing connections of this
  // thread to make room; false if it has to be refused.
  bool AdmitConnection(const IpAddress& source, loop::TcpConnectionCaps::Slot* slot);
  void MarkIdle(Connection& connection);
  void MarkBusy(Connection& connection);
  // The oldest idle connection from `source`, or nullptr.
  Connection* OldestIdleFrom(const IpAddress& source);
  // The connection to close for a newcomer whose source holds `newcomer_source_connections`
  // at the total cap, or nullptr.
  Connection* FairVictim(size_t newcomer_source_connections);
  // At the total cap with nothing of this thread's to close: admits the newcomer from
  // `source` over the cap if another thread holds a source it may take from, and asks the
  // other threads to close one for it.
  bool AdmitOverCap(const IpAddress& source, loop::TcpConnectionCaps::Slot* slot);
  // Another thread's request (TcpConnectionCaps::AskForRoom), on this thread.
  void MakeRoom(const loop::TcpConnectionCaps::RoomRequest& request);
  void Evict(Connection& victim);
  void Handle(Request& request);
  // For Responder: sends or drops; `responder` is pending and belongs to this server.
  bool Reply(const Responder& responder, std::span<const uint8_t> response);
  void Drop(const Responder& responder);
  // Copies the sockets' loop-thread counters into stats_.
  void MirrorSocketStats();
  // Reports this socket's receive backlog to the ClientLimiter.
  void TickClients();
  // Before the loop waits: the handler releases its snapshots (QueryHandler::ReleaseSnapshots).
  static void OnPrepare(uv_prepare_t* handle) noexcept;

  loop::Loop& loop_;
  Options options_;
  QueryGate gate_;  // over options_' policies
  ThreadStats& stats_;
  // kResponseBufferBytes from the kernel (ZeroedArray): a page becomes resident only once a
  // response that large was written (most never pass the first), not in every idle thread.
  ZeroedArray<uint8_t> response_buffer_;
  ThreadContext context_;
  std::unique_ptr<loop::UdpSocket> udp_;
  std::unique_ptr<loop::TcpListener> tcp_;
  std::unordered_map<uint64_t, Connection> connections_;
  Connection* idle_oldest_ = nullptr;
  Connection* idle_newest_ = nullptr;
  uint64_t next_connection_id_ = 1;
  uint64_t next_idle_order_ = 1;
  // How other threads reach this one to make room (AskForRoom); destroyed first, with
  // whatever they posted.
  std::unique_ptr<loop::TaskQueue> room_tasks_;
  uint64_t room_maker_id_ = 0;
  // FairVictim's, reused: the candidates and the connections they stand for.
  std::vector<loop::EvictionCandidate> eviction_candidates_;
  std::vector<Connection*> eviction_connections_;
  loop::Timer mirror_timer_;
  loop::Timer clients_timer_;
  uint32_t socket_drops_ = 0;                     // SK_MEMINFO_DROPS at the last TickClients
  loop::UvHandle<uv_prepare_t> release_prepare_;  // calls OnPrepare; unref'd
  // Destroyed first (see the destructor).
  std::unique_ptr<QueryHandler> handler_;
};

}  // namespace kdns::server

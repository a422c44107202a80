// The interface between the DNS serving skeleton (LoopServer, DnsServer) and the protocol
// logic: a QueryHandler per serving thread receives each query as a Request and answers it
// now (Request::Reply), later (Request::TakeResponder, then Responder::Reply from the same
// thread), or not at all (a drop). Every query was admitted first (admission.h): the
// Request carries the parsed query and the verdict, so handlers never parse it again; a
// query not admitted still reaches the handler, which counts it and sends WriteRefusal's
// reply (or nothing, for kDrop).
//
//   - A synchronous authoritative server writes its answer into
//     Request::response_buffer() and calls Reply() before returning.
//   - An asynchronous forwarder takes the Responder, keeps it with its upstream query and
//     replies when the upstream answers or times out.
//
// Replies are copied (into the UDP send queue or the TCP output) before Reply returns, so
// the thread's response buffer can be reused at once. A reply may fail and is then counted
// in ServerStats::dropped_replies: the UDP send queue is full or the datagram is over 65507
// bytes, or the TCP connection has closed (a late answer to a client that went away: the
// Responder holds the connection's id, not a pointer, so this is safe) or its output is
// over its bound. UDP replies are sent as given: fitting the client's buffer size and
// setting TC is the handler's job.
//
// A query neither replied to nor taken when HandleQuery returns, or a Responder destroyed
// without replying, is a drop (ServerStats::unanswered). Over UDP nothing is sent. Over TCP
// the connection is closed once its other queries are answered: a server that does not
// answer a stream query has decided the client is broken, and an unanswered query would
// otherwise keep the connection's idle timeout from ever running.
//
// When a TCP connection closes, the handler is told (OnConnectionClosed), so it can drop
// that connection's Responders at once instead of holding them until they reply in vain.
// When a TCP connection's queries got no answer within TcpOptions::query_timeout_ms, the
// handler is asked to answer the ones it keeps now (OnQueriesOverdue); if it answers none,
// the connection is closed, so no handler can hold a connection's slot for longer.
//
// Thread: a QueryHandler, its Requests and Responders live on one serving thread. A
// Responder must be used and destroyed on that thread, before the handler is destroyed
// (handlers own their pending Responders; the server destroys the handler first at
// shutdown, while connections and sockets still exist).
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "common/dns/transport.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/udp_socket.h"
#include "common/server/admission.h"

namespace kdns::server {

class LoopServer;

// Size of each thread's reusable response buffer: the largest DNS message (TCP) fits.
inline constexpr size_t kResponseBufferBytes = 64 * 1024;

// What a handler gets to know about the thread it serves; valid as long as the handler.
struct ThreadContext {
  loop::Loop& loop;     // for timers and upstream sockets owned by the handler
  size_t thread_index;  // 0 .. threads-1
  // kResponseBufferBytes, reused by every query of the thread: write a response here and
  // Reply() it before the next query is handled.
  std::span<uint8_t> response_buffer;
};

// The right to answer one query, possibly later. Movable, not copyable; empty once it
// replied, dropped or was moved from.
class Responder {
 public:
  Responder() = default;
  Responder(Responder&& other) noexcept;
  Responder& operator=(Responder&& other) noexcept;
  // Drops the query if it was not answered.
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  // Sends the response (copied before returning) and empties the Responder. False if it
  // was empty or the reply could not be sent (see the header comment).
  bool Reply(std::span<const uint8_t> response);
  // Gives up on the query without answering (see the header comment). No-op when empty.
  void Drop();

  // True until Reply, Drop or a move.
  bool pending() const { return server_ != nullptr; }
  dns::Transport transport() const { return transport_; }
  // Where the reply goes: the socket peer.
  loop::SocketAddress peer() const;
  // Whom the query is for (Admission::client): the peer, or the client a trusted
  // forwarder's client-address option named. Every per-client mechanism uses this.
  loop::SocketAddress client() const;
  // Whether client() came from a trusted forwarder's option (the peer is that forwarder).
  bool via_forwarder() const { return via_forwarder_; }
  // TCP: the connection the query came on, as QueryHandler::OnConnectionClosed names it
  // (unique for the LoopServer's life). 0 for UDP.
  uint64_t connection_id() const { return connection_id_; }

 private:
  friend class LoopServer;
  Responder(LoopServer* server, dns::Transport transport, const loop::SocketAddress& peer,
            const Admission& admission, const loop::UdpReplyContext& reply_context,
            uint64_t connection_id)
      : server_(server),
        transport_(transport),
        via_forwarder_(admission.client_source == ClientSource::kOption),
        connection_id_(connection_id),
        peer_(Compact(peer)),
        client_(via_forwarder_ ? Compact(admission.client) : PeerAddress{}),
        reply_context_(reply_context) {}

  // The client's address in the room an IP address needs (a loop::SocketAddress holds a
  // whole sockaddr_storage, 128 bytes): every waiting query keeps its Responder.
  union PeerAddress {
    sockaddr any;
    sockaddr_in v4;
    sockaddr_in6 v6;
  };
  static PeerAddress Compact(const loop::SocketAddress& address);

  LoopServer* server_ = nullptr;
  dns::Transport transport_ = dns::Transport::kUdp;
  bool via_forwarder_ = false;
  uint64_t connection_id_ = 0;  // TCP: the key in the thread's connection table
  PeerAddress peer_{};
  PeerAddress client_{};                 // set only via_forwarder_ (else the client is the peer)
  loop::UdpReplyContext reply_context_;  // UDP: the local address the query came to
};

// What a program decided for an admitted query from what it holds (its records, its cache,
// its routing), without I/O, on the thread that saw the query first: made by
// AnswerOnReceiverThread on the receiver thread and handed to the loop with the query, so
// that HandleQuery acts on it instead of looking everything up again. A program decides
// with one pure function callable from either thread; what it answered there never
// reaches the loop, so a handed-off decision is one of:
struct Decision {
  enum class Kind : uint8_t {
    kUndecided,  // not decided (the loop received it, or the program declined to decide
                 // there: CHAOS, local answers, anything counted on the loop): HandleQuery
                 // decides from the start
    kForward,    // a miss to forward on the program's route `route` of its routing
                 // `generation`; when the loop's routing is another generation by now,
                 // HandleQuery decides again
  };
  Kind kind = Kind::kUndecided;
  uint32_t route = 0;
  uint64_t generation = 0;
};

// One query being handled. Lives on the stack for the duration of HandleQuery.
class Request {
 public:
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // The query message (without a TCP length prefix), valid only during HandleQuery.
  std::span<const uint8_t> query() const { return query_; }
  // The query parsed and admitted, valid only during HandleQuery (its EDNS options point
  // into query()).
  const Admission& admission() const { return admission_; }
  // What the receiver thread decided for it (Decision), kUndecided when nothing was.
  const Decision& decision() const { return decision_; }
  dns::Transport transport() const { return responder_.transport(); }
  // Where the reply goes (the socket peer), and whom the query is for (Responder::client:
  // the address every per-client mechanism uses).
  loop::SocketAddress peer() const { return responder_.peer(); }
  loop::SocketAddress client() const { return admission_.client; }
  size_t thread_index() const { return context_.thread_index; }
  // The thread's reusable buffer (ThreadContext::response_buffer).
  std::span<uint8_t> response_buffer() const { return context_.response_buffer; }
  const ThreadContext& context() const { return context_; }

  // Answers now. False if already answered or taken, or if the reply could not be sent.
  bool Reply(std::span<const uint8_t> response) { return responder_.Reply(response); }
  // Moves the right to answer out, to reply later from this thread. Empty if already
  // answered or taken.
  Responder TakeResponder() { return std::move(responder_); }
  // Neither answered nor taken yet.
  bool pending() const { return responder_.pending(); }

 private:
  friend class LoopServer;
  Request(const ThreadContext& context, std::span<const uint8_t> query, const Admission& admission,
          const Decision& decision, Responder responder)
      : context_(context),
        query_(query),
        admission_(admission),
        decision_(decision),
        responder_(std::move(responder)) {}

  const ThreadContext& context_;
  std::span<const uint8_t> query_;
  const Admission& admission_;
  const Decision decision_;  // a copy: 16 bytes, and the caller's may be a temporary
  Responder responder_;      // dropped at destruction if still pending
};

class QueryHandler {
 public:
  virtual ~QueryHandler() = default;
  // Called on the serving thread for every query, UDP or TCP. Must not block, and must
  // not throw (an exception is caught, logged rate-limited and the query dropped).
  virtual void HandleQuery(Request& request) = 0;

  // A TCP connection closed (the client closed it, or a timeout or limit did): a Responder
  // for it (Responder::connection_id) can no longer reply. A handler that keeps queries
  // waiting drops that connection's now, rather than keep them until their upstream
  // answers (waiting_queries.h). Called on the serving thread, never from inside
  // HandleQuery or a Reply; must not throw.
  virtual void OnConnectionClosed(uint64_t connection_id) { (void)connection_id; }

  // The TCP connection's queries got no answer within TcpOptions::query_timeout_ms: a
  // handler that keeps queries waiting answers that connection's now, as it would when the
  // upstream timed out (SERVFAIL, or a stale answer), giving their slots back. One that
  // answers none has the connection closed (then OnConnectionClosed). Called on the serving
  // thread, never from inside HandleQuery or a Reply; must not throw.
  virtual void OnQueriesOverdue(uint64_t connection_id) { (void)connection_id; }

  // Called on the serving thread before its loop waits for events (LoopServer's
  // uv_prepare_t), never inside a query: the handler lets go of its thread's copies of
  // shared snapshots (SnapshotHolder::Reader::Release), so that an idle thread does not keep
  // an old one alive; the first query after the wait takes the current one again (one
  // mutex per wake, not per query). Must not block or throw.
  virtual void ReleaseSnapshots() {}
  // The same on the UDP receiver thread (with UdpOptions::receiver_thread), called when no
  // datagram came for receiver_wake_ms. Must not block or throw.
  virtual void ReleaseReceiverSnapshots() {}

  // The UDP fast path, with UdpOptions::receiver_thread: called on the UDP socket's
  // receiver thread for every admitted datagram (admission.h; the rest go to HandleQuery)
  // before the serving thread sees it, concurrently with HandleQuery. Writes a whole reply
  // to `query` (parsed: admission.query) into `out` and returns its size, or returns 0 to
  // leave the query to HandleQuery, which then gets it with this same admission (the query
  // is not parsed again) and with what was written into *decision (kUndecided when it is
  // left as it came). May use only state that is safe to share with the serving thread;
  // must not block or throw.
  virtual size_t AnswerOnReceiverThread(const Admission& admission, std::span<const uint8_t> query,
                                        const loop::SocketAddress& peer, std::span<uint8_t> out,
                                        Decision* decision) {
    (void)admission;
    (void)query;
    (void)peer;
    (void)out;
    (void)decision;
    return 0;
  }
};

// Makes the handler of one thread. Called on that thread, before it serves, one thread at
// a time; it may create loop objects (timers, sockets) on context.loop.
using HandlerFactory = std::function<std::unique_ptr<QueryHandler>(const ThreadContext& context)>;

}  // namespace kdns::server

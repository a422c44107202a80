// DnsTcpConnection: DNS over TCP (RFC 1035 4.2.2, RFC 7766) on one TcpConnection.
//
// Each query is delivered to the QueryCallback as soon as it is framed; several may be in
// flight at once (pipelining, RFC 7766 6.2.1.1) and responses may be sent in any order
// (Send() one response per query). At most Options::max_outstanding_queries are delivered
// and not yet answered; at the cap the connection stops reading (RFC 7766 6.2.2 lets a
// server stop reading) and resumes on the next loop iteration after a response. Output is
// bounded: a response that would push pending output past max_pending_output_bytes closes
// the connection (kOutputOverflow: the client is not reading); so does one that does not
// fit the process-wide output budget of the TcpConnection (kOutputTotal). A client's
// half-close is honoured: outstanding queries are still answered, then the connection
// closes.
//
// Timeouts (RFC 7766 6.2.3; as Knot's tcp-io-timeout and tcp-idle-timeout), one timer:
//   frame  a message whose first byte arrived must be whole within frame_timeout_ms, however
//          its bytes trickle in (kFrameTimeout). Measured only while we read: a message
//          kept while reading is paused at the outstanding cap starts its clock on resume.
//   idle   with no query outstanding and no message arriving, the connection closes
//          idle_timeout_ms after it last became idle (kIdleTimeout). Only whole messages
//          move it: a query makes the connection busy, the response that answers the last
//          outstanding query makes it idle again. Stray bytes do not.
//   query  with queries outstanding, a response must go out within query_timeout_ms of the
//          query that made the connection busy or of the last response. When none did, the
//          OverdueCallback asks the owner to answer what is outstanding now (a DNS server:
//          SERVFAIL); an owner that sends nothing then has the connection closed
//          (kQueryTimeout). New queries do not move it, so a client cannot keep a query that
//          will never be answered alive by pipelining others behind it; and whatever the
//          handler does, a connection is never held by its queries for longer.
//
// Lifetime: the owner (a DNS server's connection table) keeps the DnsTcpConnection and
// destroys it in the CloseCallback, which comes from a libuv callback, never from inside
// Send() or Close(). A handler answering later must check that its connection still
// exists (for example by looking it up by an id in that table).
//
// Thread: the loop's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "common/loop/dns_tcp_framer.h"
#include "common/loop/handle.h"
#include "common/loop/tcp_connection.h"
#include "common/loop/timer.h"

namespace kdns::loop {

class DnsTcpConnection {
 public:
  struct Options {
    uint64_t idle_timeout_ms = 10'000;  // 0: none
    uint64_t frame_timeout_ms = 2'000;  // 0: none
    uint64_t query_timeout_ms = 5'000;  // 0: none
    size_t max_outstanding_queries = 32;
    size_t max_pending_output_bytes = 4 * DnsTcpFramer::kMaxFrameBytes;
  };

  struct Stats {
    uint64_t queries = 0;
    uint64_t responses = 0;
  };

  // `query` (without its length prefix) is valid only during the call.
  using QueryCallback = std::function<void(std::span<const uint8_t> query)>;
  using CloseCallback = std::function<void(TcpConnection::CloseReason reason)>;
  // The query timeout passed with queries outstanding: answer them now (Send), or the
  // connection is closed with kQueryTimeout when this returns having sent nothing.
  using OverdueCallback = std::function<void()>;

  // Takes over `connection` (accepted, not yet started) and starts reading. Its own idle
  // timeout is switched off: this class keeps the DNS one. Without `on_overdue`, the query
  // timeout closes the connection.
  DnsTcpConnection(Loop& loop, std::unique_ptr<TcpConnection> connection, const Options& options,
                   QueryCallback on_query, CloseCallback on_close,
                   OverdueCallback on_overdue = nullptr);
  ~DnsTcpConnection();
  DnsTcpConnection(const DnsTcpConnection&) = delete;
  DnsTcpConnection& operator=(const DnsTcpConnection&) = delete;

  // Sends the response to one delivered query. False if the connection is closing, the
  // message is longer than 65535 bytes, or an output bound was hit (the connection is
  // then closed with kOutputOverflow or kOutputTotal).
  bool Send(std::span<const uint8_t> response);
  void Close(TcpConnection::CloseReason reason = TcpConnection::CloseReason::kLocal) {
    connection_->Close(reason);
  }

  // When the connection times out next and why, from its state (pure: the timer only
  // wakes us for it): the earliest of the timeouts that run. `last_progress_ms`: when the
  // query that made the connection busy came, or the last response went out. nullopt: no
  // timeout runs (timeouts off).
  struct Deadline {
    uint64_t at_ms;
    TcpConnection::CloseReason reason;  // kFrameTimeout, kIdleTimeout or kQueryTimeout
  };
  static std::optional<Deadline> NextDeadline(const DnsTcpFramer& framer, size_t outstanding,
                                              uint64_t last_progress_ms, const Options& options);

  size_t outstanding_queries() const { return outstanding_; }
  const SocketAddress& peer_address() const { return connection_->peer_address(); }
  const Stats& stats() const { return stats_; }
  size_t buffered_input_bytes() const { return framer_.buffered_bytes(); }

 private:
  DnsTcpFramer::Next OnMessage(std::span<const uint8_t> message);
  void OnData(std::span<const uint8_t> bytes);
  void OnEof();
  void ResumeFraming();
  // Re-arms the one timer for the earlier of the frame and the idle deadline, if any.
  void UpdateDeadline();
  void OnDeadline();
  // The query timeout passed: the owner answers, or the connection closes.
  void OnQueriesOverdue();

  Loop& loop_;
  std::unique_ptr<TcpConnection> connection_;
  Options options_;
  QueryCallback on_query_;
  CloseCallback on_close_;
  OverdueCallback on_overdue_;
  DnsTcpFramer framer_;
  Timer resume_timer_;
  Timer deadline_timer_;
  uint64_t armed_deadline_ms_ = 0;  // what deadline_timer_ is set for, while active
  // When outstanding_ last rose from 0 or a response last went out (or the start): idle
  // since then with none outstanding, waiting since then with some.
  uint64_t last_progress_ms_ = 0;
  size_t outstanding_ = 0;
  bool peer_done_ = false;  // the client half-closed
  Stats stats_;
  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop

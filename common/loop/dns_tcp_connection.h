// DnsTcpConnection: DNS over TCP (RFC 1035 4.2.2, RFC 7766) on one TcpConnection.
//
// Each query is delivered to the QueryCallback as soon as it is framed; several may be in
// flight at once (pipelining, RFC 7766 6.2.1.1) and responses may be sent in any order
// (Send() one response per query). At most Options::max_outstanding_queries are delivered
// and not yet answered; at the cap the connection stops reading (RFC 7766 6.2.2 lets a
// server stop reading) and resumes on the next loop iteration after a response. Output is
// bounded: a response that would push pending output past max_pending_output_bytes closes
// the connection (the client is not reading). The idle timeout (RFC 7766 6.2.3: seconds,
// not minutes) runs only while no query is outstanding. A client's half-close is honoured:
// outstanding queries are still answered, then the connection closes.
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
#include <span>

#include "common/loop/dns_tcp_framer.h"
#include "common/loop/handle.h"
#include "common/loop/tcp_connection.h"
#include "common/loop/timer.h"

namespace kdns::loop {

class DnsTcpConnection {
 public:
  struct Options {
    uint64_t idle_timeout_ms = 10'000;
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

  // Takes over `connection` (accepted, not yet started) and starts reading.
  DnsTcpConnection(Loop& loop, std::unique_ptr<TcpConnection> connection, const Options& options,
                   QueryCallback on_query, CloseCallback on_close);
  ~DnsTcpConnection();
  DnsTcpConnection(const DnsTcpConnection&) = delete;
  DnsTcpConnection& operator=(const DnsTcpConnection&) = delete;

  // Sends the response to one delivered query. False if the connection is closing, the
  // message is longer than 65535 bytes, or the output bound was hit (the connection is
  // then closed with kOutputOverflow).
  bool Send(std::span<const uint8_t> response);
  void Close() { connection_->Close(); }

  size_t outstanding_queries() const { return outstanding_; }
  const SocketAddress& peer_address() const { return connection_->peer_address(); }
  const Stats& stats() const { return stats_; }

 private:
  DnsTcpFramer::Next OnMessage(std::span<const uint8_t> message);
  void OnData(std::span<const uint8_t> bytes);
  void OnEof();
  void ResumeFraming();
  void UpdateIdleTimer();

  std::unique_ptr<TcpConnection> connection_;
  Options options_;
  QueryCallback on_query_;
  CloseCallback on_close_;
  DnsTcpFramer framer_;
  Timer resume_timer_;
  size_t outstanding_ = 0;
  bool peer_done_ = false;  // the client half-closed
  Stats stats_;
  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop

// TcpClient: one DNS-over-TCP connection to an upstream, reused for many queries
// (RFC 7766 §6.2.1: pipelining; replies may come in any order and are matched by ID by
// the owner). Messages sent before the connection is up are queued and written once it
// is. An idle timeout closes it when unused; the owner opens a new one on demand.
//
// Closing: on_closed runs exactly once, from a libuv callback (never from inside Send),
// when the connection failed to open or closed for any reason: peer FIN, reset, idle
// timeout, a framing error. The owner may destroy the TcpClient inside it, and must
// treat queries still waiting on it as failed.
//
// Over TLS (ConnectTls, a tls:// upstream, RFC 7858): the same framing and pipelining inside
// a TLS session (loop/tls_session.h) that the connection's read and write callbacks drive.
// Messages wait in the queue until the handshake is done; a failed handshake (an untrusted
// certificate, the wrong name) closes the connection (tls_handshake_failed()) and nothing
// is ever sent in the clear.
//
// Thread: the loop's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/loop/dns_tcp_framer.h"
#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/tcp_connection.h"
#include "common/loop/tls_session.h"

namespace kdns::upstream {

class TcpClient {
 public:
  struct Callbacks {
    // One framed reply (without the length prefix), valid during the call.
    std::function<void(std::span<const uint8_t> message)> on_message;
    // `reason` is for logs.
    std::function<void(const std::string& reason)> on_closed;
  };

  // nullptr with *error if the attempt cannot even start.
  [[nodiscard]] static std::unique_ptr<TcpClient> Connect(loop::Loop& loop,
                                                          const loop::SocketAddress& peer,
                                                          uint64_t idle_timeout_ms,
                                                          Callbacks callbacks, std::string* error);
  // The same, over TLS: the peer must prove to be `tls_peer` to a CA of `tls`.
  [[nodiscard]] static std::unique_ptr<TcpClient> ConnectTls(
      loop::Loop& loop, const loop::SocketAddress& peer, const loop::TlsContext& tls,
      const loop::TlsPeer& tls_peer, uint64_t idle_timeout_ms, Callbacks callbacks,
      std::string* error);
  ~TcpClient();
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  // Queues one message with its length prefix. False if the connection is closing or the
  // output bound (one megabyte) is hit; the caller then treats the query as failed.
  [[nodiscard]] bool Send(std::span<const uint8_t> message);

  bool connected() const { return connected_; }
  bool closed() const { return closed_; }
  const loop::SocketAddress& peer() const { return peer_; }
  uint64_t messages_received() const { return messages_received_; }
  // Closed because the TLS handshake failed (on_closed's reason says why).
  bool tls_handshake_failed() const { return tls_ != nullptr && tls_->handshake_failed(); }
  // Over TLS, whether the finished handshake resumed a session (loop/tls_session.h).
  bool tls_resumed() const { return tls_ != nullptr && tls_->resumed(); }

 private:
  TcpClient(const loop::SocketAddress& peer, Callbacks callbacks);
  void OnConnected(int status);
  void OnData(std::span<const uint8_t> bytes);
  // TLS: decrypts, then frames; writes what the session produced.
  void OnTlsData(std::span<const uint8_t> bytes);
  // Writes `message` framed: in the clear, or through the TLS session.
  [[nodiscard]] bool WriteFramed(std::span<const uint8_t> prefix, std::span<const uint8_t> message);
  // Writes the session's pending output; false (the connection is closing) on failure.
  bool FlushTls();
  // The handshake finished: the queued messages go out.
  void SendQueued();
  // Runs on_closed once; the TcpClient may be gone afterwards.
  void NotifyClosed(const std::string& reason);

  loop::SocketAddress peer_;
  Callbacks callbacks_;
  std::unique_ptr<loop::TcpConnection> connection_;
  loop::DnsTcpFramer framer_;
  std::unique_ptr<loop::TlsSession> tls_;  // null in the clear
  std::vector<uint8_t> plaintext_;         // TLS: decrypted bytes for the framer
  std::vector<uint8_t> queued_;            // framed messages written before the connection was up
  bool connected_ = false;
  bool closed_ = false;
  uint64_t messages_received_ = 0;
  loop::internal::DeathWatch death_watch_;
};

}  // namespace kdns::upstream

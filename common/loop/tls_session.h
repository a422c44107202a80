// TLS for DNS over TLS upstreams (RFC 7858): a TlsContext (the trust store, shared by every
// connection of a process) and a TlsSession (one client-side TLS session over memory BIOs).
// The session does no I/O: its owner feeds it the bytes read from the socket and writes
// out what it produces, so a libuv stream drives it from its read and write callbacks
// (TcpClient does). Certificates are always verified: against the context's CA file, or
// the system's CA bundle; the peer must be `server_name` (SNI and the certificate's DNS
// names) or, without a name, the IP address it was dialled at (the certificate's IP
// addresses). There is no mode without verification.
//
// Sessions are resumed (RFC 8446 §2.2 tickets, RFC 5077 in TLS 1.2), as CoreDNS's forward
// does with its client session cache: the context keeps the newest session each peer (its
// address, port and name) gave, and the next connection to that peer offers it, saving the
// certificate exchange and its verification (the session was verified, for that name, when
// it was made). A resumption the server refuses is a full handshake; a handshake that fails
// forgets the peer's session.
//
// TlsContext: configured in Create, then shared across threads (OpenSSL's SSL_CTX is
// thread-safe once configured; the session store has its own lock). TlsSession: one
// thread, its owner's.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"

namespace kdns::loop {

class TlsContext : public std::enable_shared_from_this<TlsContext> {
 public:
  // Peers whose sessions are kept; past it, the oldest is forgotten. More than the
  // upstreams any configuration names.
  static constexpr size_t kMaxSessions = 256;

  // A client context trusting `ca_file` (PEM), or the system's CA bundle when empty.
  // nullptr with *error when the file cannot be loaded.
  [[nodiscard]] static std::shared_ptr<const TlsContext> Create(const std::string& ca_file,
                                                                std::string* error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

  // The session store, by TlsPeer::SessionKey(). Any thread.
  // A copy of the peer's session (SSL_SESSION_free it), or nullptr.
  SSL_SESSION* SessionFor(const std::string& key) const;
  // Keeps `session` (taking the caller's reference) as the peer's, freeing the one before;
  // past kMaxSessions peers, the one kept longest ago goes.
  void KeepSession(const std::string& key, SSL_SESSION* session) const;
  void ForgetSession(const std::string& key) const;
  size_t sessions() const;

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
  mutable std::mutex mutex_;
  // Peer key -> (its session, when it was kept: a counter, for evicting the oldest).
  mutable std::unordered_map<std::string, std::pair<SSL_SESSION*, uint64_t>> sessions_;
  mutable uint64_t kept_ = 0;
};

// Who the peer must prove to be.
struct TlsPeer {
  std::string server_name;  // SNI and the certificate's DNS name; empty: `ip` is checked
  IpAddress ip;
  uint16_t port = 0;  // with the rest, which sessions it may resume

  // "ip#port name": a session is resumed only with the peer, at the port, under the name
  // that made it.
  std::string SessionKey() const;
};

class TlsSession {
 public:
  enum class Status {
    kOk,      // go on (write out TakeOutput())
    kFailed,  // the handshake or the stream failed; error() says why. Final.
    kClosed,  // the peer sent close_notify. Final.
  };

  // nullptr with *error when OpenSSL cannot set the session up. The session keeps
  // `context` (made by TlsContext::Create) alive: its store takes the session's tickets.
  [[nodiscard]] static std::unique_ptr<TlsSession> NewClient(const TlsContext& context,
                                                             const TlsPeer& peer,
                                                             std::string* error);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Starts the handshake (the ClientHello goes to TakeOutput()).
  Status Start();
  // Bytes read from the socket; the plaintext they complete is appended to *plaintext.
  Status Feed(std::span<const uint8_t> ciphertext, std::vector<uint8_t>* plaintext);
  // Encrypts `plaintext` (after the handshake only); the records go to TakeOutput().
  Status Write(std::span<const uint8_t> plaintext);
  // The bytes to write to the socket, in order; empty when none.
  std::vector<uint8_t> TakeOutput();

  bool handshake_done() const { return handshake_done_; }
  // Whether the finished handshake resumed a session the context kept.
  bool resumed() const { return handshake_done_ && SSL_session_reused(ssl_) == 1; }
  // Whether the session failed during the handshake (certificate, name, protocol).
  bool handshake_failed() const { return failed_ && !handshake_done_; }
  // Why it failed: "certificate verify failed: Hostname mismatch", ...
  const std::string& error() const { return error_; }

 private:
  TlsSession(SSL* ssl, std::shared_ptr<const TlsContext> context, std::string session_key)
      : ssl_(ssl), context_(std::move(context)), session_key_(std::move(session_key)) {}
  friend class TlsContext;  // installs OnNewSession
  // OpenSSL's new-session callback: a session (or a TLS 1.3 ticket) the server gave.
  static int OnNewSession(SSL* ssl, SSL_SESSION* session);
  Status Fail(int ssl_result);
  Status Handshake();
  // Moves what OpenSSL wrote into the pair to output_, so the pair never fills.
  void Drain();

  SSL* ssl_;
  const std::shared_ptr<const TlsContext> context_;  // its session store
  const std::string session_key_;
  BIO* network_ = nullptr;  // our end of the BIO pair: ciphertext in and out
  bool handshake_done_ = false;
  bool failed_ = false;
  std::string error_;
  std::vector<uint8_t> output_;  // ciphertext not yet taken
};

}  // namespace kdns::loop

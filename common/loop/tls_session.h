// TLS for DNS over TLS upstreams (RFC 7858): a TlsContext (the trust store, shared by every
// connection of a process) and a TlsSession (one client-side TLS session over memory BIOs).
// The session does no I/O: its owner feeds it the bytes read from the socket and writes
// out what it produces, so a libuv stream drives it from its read and write callbacks
// (TcpClient does). Certificates are always verified: against the context's CA file, or
// the system's CA bundle; the peer must be `server_name` (SNI and the certificate's DNS
// names) or, without a name, the IP address it was dialled at (the certificate's IP
// addresses). There is no mode without verification.
//
// TlsContext: immutable after Create, shared across threads (OpenSSL's SSL_CTX is
// thread-safe once configured). TlsSession: one thread, its owner's.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/base/ip_address.h"

namespace kdns::loop {

class TlsContext {
 public:
  // A client context trusting `ca_file` (PEM), or the system's CA bundle when empty.
  // nullptr with *error when the file cannot be loaded.
  [[nodiscard]] static std::shared_ptr<const TlsContext> Create(const std::string& ca_file,
                                                                std::string* error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// Who the peer must prove to be.
struct TlsPeer {
  std::string server_name;  // SNI and the certificate's DNS name; empty: `ip` is checked
  IpAddress ip;
};

class TlsSession {
 public:
  enum class Status {
    kOk,      // go on (write out TakeOutput())
    kFailed,  // the handshake or the stream failed; error() says why. Final.
    kClosed,  // the peer sent close_notify. Final.
  };

  // nullptr with *error when OpenSSL cannot set the session up.
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
  // Whether the session failed during the handshake (certificate, name, protocol).
  bool handshake_failed() const { return failed_ && !handshake_done_; }
  // Why it failed: "certificate verify failed: Hostname mismatch", ...
  const std::string& error() const { return error_; }

 private:
  explicit TlsSession(SSL* ssl) : ssl_(ssl) {}
  Status Fail(int ssl_result);
  Status Handshake();
  // Moves what OpenSSL wrote into the pair to output_, so the pair never fills.
  void Drain();

  SSL* ssl_;
  BIO* network_ = nullptr;  // our end of the BIO pair: ciphertext in and out
  bool handshake_done_ = false;
  bool failed_ = false;
  std::string error_;
  std::vector<uint8_t> output_;  // ciphertext not yet taken
};

}  // namespace kdns::loop

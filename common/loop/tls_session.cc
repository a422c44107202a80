#include "common/loop/tls_session.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <utility>

namespace kdns::loop {

namespace {

// The BIO pair's buffer each way: a TLS record (16 KiB) and its overhead.
constexpr size_t kBioBufferBytes = 17 * 1024;

// OpenSSL's queued errors as one line, the queue emptied.
std::string TakeOpenSslErrors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    std::array<char, 256> buffer{};
    ERR_error_string_n(code, buffer.data(), buffer.size());
    if (!text.empty()) text += "; ";
    text += buffer.data();
  }
  return text;
}

}  // namespace

std::shared_ptr<const TlsContext> TlsContext::Create(const std::string& ca_file,
                                                     std::string* error) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    *error = "SSL_CTX_new: " + TakeOpenSslErrors();
    return nullptr;
  }
  std::shared_ptr<const TlsContext> context(new TlsContext(ctx));
  // RFC 8310 §8.1: TLS 1.2 at least.
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Sessions go to the context's own store, by peer (OpenSSL's internal client cache is
  // not looked up by clients).
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &TlsSession::OnNewSession);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const int loaded = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                     : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  if (loaded != 1) {
    *error = (ca_file.empty() ? std::string("the system CA bundle") : ca_file) + ": " +
             TakeOpenSslErrors();
    return nullptr;
  }
  return context;
}

TlsContext::~TlsContext() {
  for (auto& [key, kept] : sessions_) SSL_SESSION_free(kept.first);
  SSL_CTX_free(ctx_);
}

SSL_SESSION* TlsContext::SessionFor(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return nullptr;
  // A copy: OpenSSL marks the session a connection used unresumable when that connection
  // ends without close_notify (an idle timeout, the peer closing), which must not spoil
  // the kept one.
  return SSL_SESSION_dup(it->second.first);
}

void TlsContext::KeepSession(const std::string& key, SSL_SESSION* session) const {
  SSL_SESSION* replaced = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = sessions_.try_emplace(key, session, ++kept_);
    if (!inserted) {
      replaced = it->second.first;
      it->second = {session, kept_};
    } else if (sessions_.size() > kMaxSessions) {
      auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](auto& a, auto& b) {
        return a.second.second < b.second.second;
      });
      replaced = oldest->second.first;
      sessions_.erase(oldest);
    }
  }
  if (replaced != nullptr) SSL_SESSION_free(replaced);
}

void TlsContext::ForgetSession(const std::string& key) const {
  SSL_SESSION* forgotten = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(key);
    if (it == sessions_.end()) return;
    forgotten = it->second.first;
    sessions_.erase(it);
  }
  SSL_SESSION_free(forgotten);
}

size_t TlsContext::sessions() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::string TlsPeer::SessionKey() const {
  return ip.ToString() + "#" + std::to_string(port) + " " + server_name;
}

int TlsSession::OnNewSession(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<TlsSession*>(SSL_get_app_data(ssl));
  if (self == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
  // A copy, for the reason SessionFor gives: `session` is the connection's own.
  if (SSL_SESSION* copy = SSL_SESSION_dup(session)) {
    self->context_->KeepSession(self->session_key_, copy);
  }
  return 0;  // OpenSSL keeps its reference to the original
}

std::unique_ptr<TlsSession> TlsSession::NewClient(const TlsContext& context, const TlsPeer& peer,
                                                  std::string* error) {
  SSL* ssl = SSL_new(context.get());
  if (ssl == nullptr) {
    *error = "SSL_new: " + TakeOpenSslErrors();
    return nullptr;
  }
  std::unique_ptr<TlsSession> session(
      new TlsSession(ssl, context.shared_from_this(), peer.SessionKey()));
  SSL_set_app_data(ssl, session.get());
  if (SSL_SESSION* previous = context.SessionFor(session->session_key_)) {
    // Offered in the ClientHello; a server that refuses it makes a full handshake.
    (void)SSL_set_session(ssl, previous);  // takes its own reference
    SSL_SESSION_free(previous);
  }
  BIO* internal = nullptr;
  if (BIO_new_bio_pair(&internal, kBioBufferBytes, &session->network_, kBioBufferBytes) != 1) {
    *error = "BIO_new_bio_pair: " + TakeOpenSslErrors();
    return nullptr;
  }
  SSL_set_bio(ssl, internal, internal);  // the SSL owns its end
  // A message larger than the pair's buffer is written record by record, draining between.
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE);
  SSL_set_connect_state(ssl);
  // The name to check: SNI and the certificate's DNS names (RFC 8310 §8.1), or its IP
  // addresses when the upstream was written without a name.
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  bool checked = false;
  if (!peer.server_name.empty()) {
    checked = SSL_set_tlsext_host_name(ssl, peer.server_name.c_str()) == 1 &&
              SSL_set1_host(ssl, peer.server_name.c_str()) == 1;
  } else {
    const std::span<const uint8_t> ip = peer.ip.bytes();
    checked = X509_VERIFY_PARAM_set1_ip(param, ip.data(), ip.size()) == 1;
  }
  if (!checked) {
    *error = "cannot set the name to verify: " + TakeOpenSslErrors();
    return nullptr;
  }
  return session;
}

TlsSession::~TlsSession() {
  SSL_free(ssl_);
  BIO_free(network_);
}

TlsSession::Status TlsSession::Start() { return Handshake(); }

void TlsSession::Drain() {
  const size_t pending = BIO_ctrl_pending(network_);
  if (pending == 0) return;
  const size_t old_size = output_.size();
  output_.resize(old_size + pending);
  const int read = BIO_read(network_, output_.data() + old_size, static_cast<int>(pending));
  output_.resize(old_size + (read > 0 ? static_cast<size_t>(read) : 0));
}

TlsSession::Status TlsSession::Handshake() {
  const int result = SSL_do_handshake(ssl_);
  Drain();
  if (result == 1) {
    handshake_done_ = true;
    return Status::kOk;
  }
  return Fail(result);
}

TlsSession::Status TlsSession::Fail(int ssl_result) {
  const int code = SSL_get_error(ssl_, ssl_result);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return Status::kOk;
  if (code == SSL_ERROR_ZERO_RETURN) return Status::kClosed;
  failed_ = true;
  // A session that led to a failure is not offered again.
  if (!handshake_done_) context_->ForgetSession(session_key_);
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) {
    error_ = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    ERR_clear_error();
  } else {
    error_ = "TLS error: " + TakeOpenSslErrors();
  }
  return Status::kFailed;
}

TlsSession::Status TlsSession::Feed(std::span<const uint8_t> ciphertext,
                                    std::vector<uint8_t>* plaintext) {
  if (failed_) return Status::kFailed;
  while (!ciphertext.empty()) {
    // The pair's buffer is bounded: hand OpenSSL what fits, let it consume, repeat.
    const int written = BIO_write(network_, ciphertext.data(), static_cast<int>(ciphertext.size()));
    if (written > 0) ciphertext = ciphertext.subspan(static_cast<size_t>(written));
    if (!handshake_done_) {
      if (Status status = Handshake(); status != Status::kOk) return status;
      if (!handshake_done_) {
        if (written <= 0) {  // the handshake took nothing from a full buffer: give up
          failed_ = true;
          error_ = "TLS handshake stalled";
          return Status::kFailed;
        }
        continue;
      }
    }
    std::array<uint8_t, 16 * 1024> buffer;
    for (;;) {
      const int read = SSL_read(ssl_, buffer.data(), static_cast<int>(buffer.size()));
      Drain();
      if (read <= 0) {
        if (Status status = Fail(read); status != Status::kOk) return status;
        break;
      }
      plaintext->insert(plaintext->end(), buffer.begin(), buffer.begin() + read);
    }
  }
  return Status::kOk;
}

TlsSession::Status TlsSession::Write(std::span<const uint8_t> plaintext) {
  if (failed_ || !handshake_done_) return Status::kFailed;
  while (!plaintext.empty()) {
    const int written = SSL_write(ssl_, plaintext.data(), static_cast<int>(plaintext.size()));
    Drain();  // makes room in the pair's buffer for the next record
    if (written <= 0) {
      if (SSL_get_error(ssl_, written) == SSL_ERROR_WANT_WRITE) continue;  // retried, drained
      return Fail(written);
    }
    plaintext = plaintext.subspan(static_cast<size_t>(written));
  }
  return Status::kOk;
}

std::vector<uint8_t> TlsSession::TakeOutput() {
  Drain();
  std::vector<uint8_t> out = std::move(output_);
  output_.clear();
  return out;
}

}  // namespace kdns::loop

#include "common/upstream/tcp_client.h"

#include <uv.h>

#include <array>
#include <utility>

namespace kdns::upstream {

namespace {
constexpr size_t kMaxQueuedBytes = 1 << 20;
}  // namespace

TcpClient::TcpClient(const loop::SocketAddress& peer, Callbacks callbacks)
    : peer_(peer), callbacks_(std::move(callbacks)) {}

std::unique_ptr<TcpClient> TcpClient::Connect(loop::Loop& loop, const loop::SocketAddress& peer,
                                              uint64_t idle_timeout_ms, Callbacks callbacks,
                                              std::string* error) {
  std::unique_ptr<TcpClient> client(new TcpClient(peer, std::move(callbacks)));
  loop::TcpConnection::Options options;
  options.idle_timeout_ms = idle_timeout_ms;
  TcpClient* self = client.get();
  client->connection_ = loop::TcpConnection::Connect(
      loop, peer, options, [self](int status) { self->OnConnected(status); }, error);
  if (client->connection_ == nullptr) return nullptr;
  return client;
}

std::unique_ptr<TcpClient> TcpClient::ConnectTls(loop::Loop& loop, const loop::SocketAddress& peer,
                                                 const loop::TlsContext& tls,
                                                 const loop::TlsPeer& tls_peer,
                                                 uint64_t idle_timeout_ms, Callbacks callbacks,
                                                 std::string* error) {
  std::unique_ptr<loop::TlsSession> session = loop::TlsSession::NewClient(tls, tls_peer, error);
  if (session == nullptr) return nullptr;
  std::unique_ptr<TcpClient> client =
      Connect(loop, peer, idle_timeout_ms, std::move(callbacks), error);
  if (client != nullptr) client->tls_ = std::move(session);
  return client;
}

TcpClient::~TcpClient() = default;

bool TcpClient::Send(std::span<const uint8_t> message) {
  if (closed_ || message.size() > 65535) return false;
  const std::array<uint8_t, 2> prefix = {static_cast<uint8_t>(message.size() >> 8),
                                         static_cast<uint8_t>(message.size() & 0xFF)};
  if (!connected_ || (tls_ != nullptr && !tls_->handshake_done())) {
    if (queued_.size() + prefix.size() + message.size() > kMaxQueuedBytes) return false;
    queued_.insert(queued_.end(), prefix.begin(), prefix.end());
    queued_.insert(queued_.end(), message.begin(), message.end());
    return true;
  }
  return WriteFramed(prefix, message);
}

bool TcpClient::WriteFramed(std::span<const uint8_t> prefix, std::span<const uint8_t> message) {
  if (tls_ == nullptr) return connection_->Write({prefix, message});
  // One TLS record for the prefix and the message, not two.
  std::vector<uint8_t> framed(prefix.begin(), prefix.end());
  framed.insert(framed.end(), message.begin(), message.end());
  if (tls_->Write(framed) != loop::TlsSession::Status::kOk) return false;
  return FlushTls();
}

void TcpClient::OnConnected(int status) {
  if (status != 0) {
    NotifyClosed(std::string("connect: ") + uv_strerror(status));
    return;
  }
  connected_ = true;
  loop::TcpConnection::Callbacks callbacks;
  callbacks.on_data = [this](std::span<const uint8_t> bytes) {
    if (tls_ != nullptr) {
      OnTlsData(bytes);
    } else {
      OnData(bytes);
    }
  };
  callbacks.on_close = [this](loop::TcpConnection::CloseReason reason) {
    NotifyClosed(loop::TcpConnection::CloseReasonName(reason));
  };
  connection_->Start(std::move(callbacks));
  if (tls_ == nullptr) {
    SendQueued();
    return;
  }
  if (tls_->Start() != loop::TlsSession::Status::kOk) {
    connection_->Close(loop::TcpConnection::CloseReason::kProtocolError);
    NotifyClosed("TLS handshake: " + tls_->error());
    return;
  }
  FlushTls();  // the ClientHello
}

void TcpClient::SendQueued() {
  if (queued_.empty()) return;
  std::vector<uint8_t> queued = std::move(queued_);
  queued_.clear();
  bool written = false;
  if (tls_ == nullptr) {
    written = connection_->Write(queued);
  } else {
    written = tls_->Write(queued) == loop::TlsSession::Status::kOk && FlushTls();
  }
  if (!written) connection_->Close(loop::TcpConnection::CloseReason::kError);
}

bool TcpClient::FlushTls() {
  const std::vector<uint8_t> out = tls_->TakeOutput();
  if (out.empty() || connection_->Write(out)) return true;
  connection_->Close(loop::TcpConnection::CloseReason::kOutputOverflow);
  return false;
}

void TcpClient::OnTlsData(std::span<const uint8_t> bytes) {
  const bool was_done = tls_->handshake_done();
  plaintext_.clear();
  const loop::TlsSession::Status status = tls_->Feed(bytes, &plaintext_);
  if (status == loop::TlsSession::Status::kFailed) {
    // Fail closed: the connection goes, with whatever waits on it.
    connection_->Close(loop::TcpConnection::CloseReason::kProtocolError);
    NotifyClosed(std::string(was_done ? "TLS: " : "TLS handshake: ") + tls_->error());
    return;
  }
  if (!FlushTls()) return;
  if (status == loop::TlsSession::Status::kClosed) {
    connection_->Close(loop::TcpConnection::CloseReason::kPeerClosed);
    return;
  }
  if (!was_done && tls_->handshake_done()) SendQueued();
  if (plaintext_.empty()) return;
  const std::vector<uint8_t> plaintext = std::move(plaintext_);
  plaintext_.clear();
  OnData(plaintext);
}

void TcpClient::OnData(std::span<const uint8_t> bytes) {
  loop::internal::DeathWatch::Scope scope(death_watch_);
  auto result = framer_.Feed(bytes, [&](std::span<const uint8_t> message) {
    ++messages_received_;
    callbacks_.on_message(message);
    return scope.dead() ? loop::DnsTcpFramer::Next::kAbandon : loop::DnsTcpFramer::Next::kContinue;
  });
  if (scope.dead() || result == loop::DnsTcpFramer::Result::kAbandoned) return;
  if (result == loop::DnsTcpFramer::Result::kBadLength) {
    connection_->Close(loop::TcpConnection::CloseReason::kProtocolError);
  }
}

void TcpClient::NotifyClosed(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  connected_ = false;
  if (callbacks_.on_closed) callbacks_.on_closed(reason);
}

}  // namespace kdns::upstream

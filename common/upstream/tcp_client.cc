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

TcpClient::~TcpClient() = default;

bool TcpClient::Send(std::span<const uint8_t> message) {
  if (closed_ || message.size() > 65535) return false;
  const std::array<uint8_t, 2> prefix = {static_cast<uint8_t>(message.size() >> 8),
                                         static_cast<uint8_t>(message.size() & 0xFF)};
  if (!connected_) {
    if (queued_.size() + prefix.size() + message.size() > kMaxQueuedBytes) return false;
    queued_.insert(queued_.end(), prefix.begin(), prefix.end());
    queued_.insert(queued_.end(), message.begin(), message.end());
    return true;
  }
  return connection_->Write({std::span<const uint8_t>(prefix), message});
}

void TcpClient::OnConnected(int status) {
  if (status != 0) {
    NotifyClosed(std::string("connect: ") + uv_strerror(status));
    return;
  }
  connected_ = true;
  loop::TcpConnection::Callbacks callbacks;
  callbacks.on_data = [this](std::span<const uint8_t> bytes) { OnData(bytes); };
  callbacks.on_close = [this](loop::TcpConnection::CloseReason reason) {
    NotifyClosed(loop::TcpConnection::CloseReasonName(reason));
  };
  connection_->Start(std::move(callbacks));
  if (!queued_.empty()) {
    std::vector<uint8_t> queued = std::move(queued_);
    queued_.clear();
    if (!connection_->Write(queued)) connection_->Close(loop::TcpConnection::CloseReason::kError);
  }
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

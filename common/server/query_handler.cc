#include "common/server/query_handler.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/server/loop_server.h"

namespace kdns::server {

Responder::Responder(Responder&& other) noexcept
    : server_(std::exchange(other.server_, nullptr)),
      transport_(other.transport_),
      via_forwarder_(other.via_forwarder_),
      connection_id_(other.connection_id_),
      peer_(other.peer_),
      client_(other.client_),
      reply_context_(other.reply_context_) {}

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    Drop();
    server_ = std::exchange(other.server_, nullptr);
    transport_ = other.transport_;
    via_forwarder_ = other.via_forwarder_;
    connection_id_ = other.connection_id_;
    peer_ = other.peer_;
    client_ = other.client_;
    reply_context_ = other.reply_context_;
  }
  return *this;
}

Responder::~Responder() { Drop(); }

Responder::PeerAddress Responder::Compact(const loop::SocketAddress& address) {
  PeerAddress compact{};
  std::memcpy(&compact, address.sockaddr_ptr(),
              std::min<size_t>(sizeof(compact), address.sockaddr_len()));
  return compact;
}

loop::SocketAddress Responder::peer() const {
  return loop::SocketAddress::FromSockaddr(&peer_.any, sizeof(peer_))
      .value_or(loop::SocketAddress());
}

loop::SocketAddress Responder::client() const {
  if (!via_forwarder_) return peer();
  return loop::SocketAddress::FromSockaddr(&client_.any, sizeof(client_))
      .value_or(loop::SocketAddress());
}

bool Responder::Reply(std::span<const uint8_t> response) {
  LoopServer* server = std::exchange(server_, nullptr);
  if (server == nullptr) return false;
  return server->Reply(*this, response);
}

void Responder::Drop() {
  LoopServer* server = std::exchange(server_, nullptr);
  if (server != nullptr) server->Drop(*this);
}

}  // namespace kdns::server

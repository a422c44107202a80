#include "common/upstream/udp_socket_pool.h"

#include <glog/logging.h>
#include <uv.h>

#include <algorithm>
#include <utility>

namespace kdns::upstream {

UdpSocketPool::UdpSocketPool(loop::Loop& loop, const loop::SocketAddress& peer,
                             const Options& options, loop::internal::UdpReceiveBatch& receive,
                             SecureRandom& random, Callbacks callbacks)
    : loop_(loop),
      peer_(peer),
      options_(options),
      receive_(receive),
      random_(random),
      callbacks_(std::move(callbacks)),
      slots_(std::max<size_t>(1, options.sockets)) {
  options_.queries_per_socket = std::max<uint32_t>(1, options_.queries_per_socket);
}

// Waiters still registered are the owner's to drop (they may be gone already): untouched.
UdpSocketPool::~UdpSocketPool() = default;

size_t UdpSocketPool::open_sockets() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(),
                                           [](const auto& slot) { return slot != nullptr; }));
}

uint16_t UdpSocketPool::local_port(const Waiter* waiter) const {
  return waiter->socket == nullptr ? 0 : waiter->socket->client->local_port();
}

bool UdpSocketPool::Acquire(Waiter* waiter, uint64_t now_ms, std::string* error) {
  DCHECK(waiter->socket == nullptr);
  CloseIdleRetired();
  // A random slot: which port a query leaves from is as unpredictable as the sockets'. (16
  // bits: no bias for a power-of-two pool, and the CSPRNG buffer lasts longer.)
  const size_t index =
      slots_.size() == 1 ? 0 : static_cast<size_t>(random_.Next16() % slots_.size());
  Socket* socket = slots_[index].get();
  if (socket != nullptr && (socket->queries >= options_.queries_per_socket ||
                            now_ms - socket->opened_ms >= options_.max_age_ms)) {
    Retire(socket);
    socket = nullptr;
  }
  if (socket == nullptr) {
    auto owned = std::make_unique<Socket>();
    socket = owned.get();
    owned->client = UdpClient::Open(
        loop_, peer_, receive_,
        [this, socket](std::span<const uint8_t> datagram) { OnDatagram(socket, datagram); },
        [this, socket](int status) { OnError(socket, status); }, error);
    if (owned->client == nullptr) return false;
    owned->opened_ms = now_ms;
    slots_[index] = std::move(owned);
    ++sockets_opened_;
  }
  // Unique among the queries on this socket, so a reply finds its one waiter.
  uint16_t id = 0;
  do {
    id = random_.Next16();
  } while (std::any_of(socket->waiting.begin(), socket->waiting.end(),
                       [id](const auto& entry) { return entry.first == id; }));
  socket->waiting.emplace_back(id, waiter);
  ++socket->queries;
  waiter->socket = socket;
  waiter->id = id;
  return true;
}

int UdpSocketPool::Send(Waiter* waiter, std::span<const uint8_t> bytes) {
  Socket* socket = waiter->socket;
  DCHECK(socket != nullptr);
  const int status = socket->client->Send(bytes);
  if (status == 0 || status == UV_EAGAIN || status == UV_ENOBUFS) return status;
  // A pending error of the socket (an ICMP "port unreachable" for an earlier query on it,
  // which its receive side will now never report): every query on it asked the same
  // server, so they fail as they would on their own sockets.
  Retire(socket);
  std::vector<Waiter*> others;
  for (auto it = socket->waiting.begin(); it != socket->waiting.end();) {
    if (it->second == waiter) {
      ++it;
      continue;
    }
    it->second->socket = nullptr;
    others.push_back(it->second);
    it = socket->waiting.erase(it);
  }
  if (!others.empty()) {
    const Dispatching dispatching(this);
    callbacks_.on_error(others, status);
  }
  return status;
}

void UdpSocketPool::Release(Waiter* waiter) {
  Socket* socket = waiter->socket;
  if (socket == nullptr) return;
  auto it = std::find_if(socket->waiting.begin(), socket->waiting.end(),
                         [waiter](const auto& entry) { return entry.second == waiter; });
  if (it != socket->waiting.end()) {
    // Order does not matter: swap with the last, no shifting.
    *it = socket->waiting.back();
    socket->waiting.pop_back();
  }
  waiter->socket = nullptr;
  if (socket->retired && socket->waiting.empty()) CloseIdleRetired();
}

void UdpSocketPool::OnDatagram(Socket* socket, std::span<const uint8_t> datagram) {
  const Dispatching dispatching(this);  // inside `socket`'s own callback
  if (datagram.size() < 2) {
    callbacks_.on_malformed();
    return;
  }
  const uint16_t id = static_cast<uint16_t>(datagram[0] << 8 | datagram[1]);
  auto it = std::find_if(socket->waiting.begin(), socket->waiting.end(),
                         [id](const auto& entry) { return entry.first == id; });
  if (it == socket->waiting.end()) {
    callbacks_.on_unknown();
    return;
  }
  callbacks_.on_datagram(it->second, datagram);
}

void UdpSocketPool::OnError(Socket* socket, int status) {
  const Dispatching dispatching(this);
  if (status == UV_EMSGSIZE) {  // cut short: its ID may be fine, the message is not
    callbacks_.on_malformed();
    return;
  }
  Retire(socket);
  std::vector<Waiter*> waiters;
  waiters.reserve(socket->waiting.size());
  for (auto& [id, waiter] : socket->waiting) {
    waiter->socket = nullptr;
    waiters.push_back(waiter);
  }
  socket->waiting.clear();
  callbacks_.on_error(waiters, status);
}

void UdpSocketPool::Retire(Socket* socket) {
  if (socket->retired) return;
  socket->retired = true;
  for (auto& slot : slots_) {
    if (slot.get() == socket) {
      retired_.push_back(std::move(slot));
      break;
    }
  }
  CloseIdleRetired();
}

void UdpSocketPool::CloseIdleRetired() {
  if (dispatching_ > 0) return;
  std::erase_if(retired_, [](const auto& socket) { return socket->waiting.empty(); });
}

}  // namespace kdns::upstream

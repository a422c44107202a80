#include "common/loop/tcp_limits.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <utility>

namespace kdns::loop {

IpAddress IpOf(const SocketAddress& address) {
  if (address.is_v4()) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address.sockaddr_ptr());
    return IpAddress::FromV4(
        std::span<const uint8_t, 4>(reinterpret_cast<const uint8_t*>(&in->sin_addr), 4));
  }
  if (address.is_v6()) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address.sockaddr_ptr());
    return IpAddress::FromV6(
        std::span<const uint8_t, 16>(reinterpret_cast<const uint8_t*>(&in6->sin6_addr), 16));
  }
  return IpAddress();
}

SocketAddress SocketAddressOf(const IpAddress& address, uint16_t port) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (address.is_v4()) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, address.bytes().data(), IpAddress::kV4Size);
    length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    std::memcpy(&in6->sin6_addr, address.bytes().data(), IpAddress::kV6Size);
    length = sizeof(sockaddr_in6);
  }
  return *SocketAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&storage), length);
}

TcpConnectionCaps::Slot& TcpConnectionCaps::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    caps_ = std::exchange(other.caps_, nullptr);
    source_ = other.source_;
  }
  return *this;
}

void TcpConnectionCaps::Slot::Release() {
  if (caps_ == nullptr) return;
  std::exchange(caps_, nullptr)->Release(source_);
}

TcpConnectionCaps::TcpConnectionCaps(size_t max_connections, size_t max_per_source)
    : max_connections_(max_connections),
      max_per_source_(max_per_source),
      open_(max_connections == 0 ? AtomicBudget::kUnbounded : max_connections) {}

TcpConnectionCaps::Shard& TcpConnectionCaps::ShardOf(const IpAddress& source) const {
  return shards_[IpAddressHash()(source) % shards_.size()];
}

TcpConnectionCaps::Verdict TcpConnectionCaps::TryAcquire(const IpAddress& source, Slot* slot) {
  if (!open_.TryTake()) return Verdict::kOverTotal;
  Shard& shard = ShardOf(source);
  {
    std::lock_guard lock(shard.mu);
    size_t& count = shard.open[source];
    if (max_per_source_ != 0 && count >= max_per_source_) {
      open_.Give();
      return Verdict::kOverSource;
    }
    ++count;
  }
  *slot = Slot();
  slot->caps_ = this;
  slot->source_ = source;
  return Verdict::kAdmitted;
}

void TcpConnectionCaps::Release(const IpAddress& source) {
  Shard& shard = ShardOf(source);
  {
    std::lock_guard lock(shard.mu);
    auto it = shard.open.find(source);
    if (it != shard.open.end() && --it->second == 0) shard.open.erase(it);
  }
  open_.Give();
}

size_t TcpConnectionCaps::open_from(const IpAddress& source) const {
  Shard& shard = ShardOf(source);
  std::lock_guard lock(shard.mu);
  auto it = shard.open.find(source);
  return it == shard.open.end() ? 0 : it->second;
}

}  // namespace kdns::loop

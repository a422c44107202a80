#include "common/loop/socket_address.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <charconv>
#include <cstring>

#include "common/base/port.h"

namespace kdns::loop {
SocketAddress::SocketAddress() {
  std::memset(&storage_, 0, sizeof(storage_));
  storage_.ss_family = AF_UNSPEC;
}

std::optional<SocketAddress> SocketAddress::Parse(std::string_view host_port) {
  if (!host_port.empty() && host_port.front() == '[') {
    size_t close = host_port.find(']');
    if (close == std::string_view::npos || close + 1 >= host_port.size() ||
        host_port[close + 1] != ':') {
      return std::nullopt;
    }
    auto port = ParsePort(host_port.substr(close + 2), PortZero::kAllow);
    std::string_view host = host_port.substr(1, close - 1);
    if (!port || host.find(':') == std::string_view::npos) return std::nullopt;
    return FromHostPort(host, *port);
  }
  size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = host_port.substr(0, colon);
  // An unbracketed IPv6 address is ambiguous with its port: refuse it.
  if (host.find(':') != std::string_view::npos) return std::nullopt;
  auto port = ParsePort(host_port.substr(colon + 1), PortZero::kAllow);
  if (!port) return std::nullopt;
  return FromHostPort(host, *port);
}

std::optional<SocketAddress> SocketAddress::FromHostPort(std::string_view host, uint16_t port) {
  if (host.empty() || host.size() >= INET6_ADDRSTRLEN + IF_NAMESIZE) return std::nullopt;
  std::string text(host);
  SocketAddress out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage_);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return out;
  }
  uint32_t scope_id = 0;
  size_t percent = text.find('%');
  if (percent != std::string::npos) {
    std::string zone = text.substr(percent + 1);
    text.resize(percent);
    if (zone.empty()) return std::nullopt;
    scope_id = if_nametoindex(zone.c_str());
    if (scope_id == 0) {
      auto [end, ec] = std::from_chars(zone.data(), zone.data() + zone.size(), scope_id);
      if (ec != std::errc() || end != zone.data() + zone.size()) return std::nullopt;
    }
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage_);
  if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) != 1) return std::nullopt;
  v6->sin6_family = AF_INET6;
  v6->sin6_port = htons(port);
  v6->sin6_scope_id = scope_id;
  return out;
}

std::optional<SocketAddress> SocketAddress::FromSockaddr(const sockaddr* sa, socklen_t len) {
  if (sa == nullptr) return std::nullopt;
  SocketAddress out;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&out.storage_, sa, sizeof(sockaddr_in));
    return out;
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&out.storage_, sa, sizeof(sockaddr_in6));
    return out;
  }
  return std::nullopt;
}

SocketAddress SocketAddress::AnyV4(uint16_t port) {
  SocketAddress out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage_);
  v4->sin_family = AF_INET;
  v4->sin_addr.s_addr = htonl(INADDR_ANY);
  v4->sin_port = htons(port);
  return out;
}

SocketAddress SocketAddress::AnyV6(uint16_t port) {
  SocketAddress out;
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage_);
  v6->sin6_family = AF_INET6;
  v6->sin6_addr = in6addr_any;
  v6->sin6_port = htons(port);
  return out;
}

uint16_t SocketAddress::port() const {
  if (is_v4()) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (is_v6()) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

void SocketAddress::set_port(uint16_t port) {
  if (is_v4()) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (is_v6()) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

bool SocketAddress::IsWildcard() const {
  if (is_v4()) {
    return reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (is_v6()) {
    const auto& addr = reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(&addr);
  }
  return false;
}

uint32_t SocketAddress::scope_id() const {
  return is_v6() ? reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_scope_id : 0;
}

std::string SocketAddress::HostString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_v4()) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf,
              sizeof(buf));
    return buf;
  }
  if (is_v6()) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&storage_);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof(buf));
    std::string out = buf;
    if (v6->sin6_scope_id != 0) out += "%" + std::to_string(v6->sin6_scope_id);
    return out;
  }
  return "<unspecified>";
}

std::string SocketAddress::ToString() const {
  if (is_v4()) return HostString() + ":" + std::to_string(port());
  if (is_v6()) return "[" + HostString() + "]:" + std::to_string(port());
  return HostString();
}

socklen_t SocketAddress::sockaddr_len() const {
  if (is_v4()) return sizeof(sockaddr_in);
  if (is_v6()) return sizeof(sockaddr_in6);
  return sizeof(storage_);
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  if (family() != other.family()) return false;
  if (is_v4()) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage_);
    const auto* b = reinterpret_cast<const sockaddr_in*>(&other.storage_);
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (is_v6()) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage_);
    const auto* b = reinterpret_cast<const sockaddr_in6*>(&other.storage_);
    return a->sin6_port == b->sin6_port && a->sin6_scope_id == b->sin6_scope_id &&
           std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return true;
}

size_t SocketAddress::Hash() const {
  // FNV-1a over the fields that operator== compares.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  int fam = family();
  mix(&fam, sizeof(fam));
  uint16_t p = port();
  mix(&p, sizeof(p));
  if (is_v4()) {
    mix(&reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, sizeof(in_addr));
  } else if (is_v6()) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&storage_);
    mix(&v6->sin6_addr, sizeof(in6_addr));
    mix(&v6->sin6_scope_id, sizeof(v6->sin6_scope_id));
  }
  return static_cast<size_t>(h);
}

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

}  // namespace kdns::loop

// SocketAddress: an IPv4 or IPv6 address and port, stored as a sockaddr_storage so it can
// be handed to the socket calls as is. Parses and formats `1.2.3.4:53` and `[::1]:53`,
// and converts to and from an IpAddress directly (IpOf, SocketAddressOf), never through
// text. It is also the one type for an upstream DNS server's address (see
// common/upstream/upstream_address.h for the notations that name one). A value type with
// no thread affinity.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/ip_address.h"

namespace kdns::loop {

class SocketAddress {
 public:
  // The unspecified address: family AF_UNSPEC, formats as "<unspecified>".
  SocketAddress();

  // `1.2.3.4:53`, `[::1]:53`, `[fe80::1%eth0]:53`. nullopt on anything else.
  static std::optional<SocketAddress> Parse(std::string_view host_port);
  // A numeric host (`1.2.3.4`, `::1`, no brackets) and a port. No name resolution.
  static std::optional<SocketAddress> FromHostPort(std::string_view host, uint16_t port);
  // From a kernel-filled sockaddr; nullopt unless AF_INET or AF_INET6 and len is enough.
  static std::optional<SocketAddress> FromSockaddr(const sockaddr* sa, socklen_t len);
  // IPv4/IPv6 wildcard (0.0.0.0 / ::) with a port.
  static SocketAddress AnyV4(uint16_t port);
  static SocketAddress AnyV6(uint16_t port);

  int family() const { return storage_.ss_family; }
  bool is_v4() const { return family() == AF_INET; }
  bool is_v6() const { return family() == AF_INET6; }
  uint16_t port() const;
  void set_port(uint16_t port);
  // True for 0.0.0.0 and ::.
  bool IsWildcard() const;
  // An IPv6 address's zone (sin6_scope_id, fe80::1%eth0); 0 for none and for IPv4.
  uint32_t scope_id() const;

  // `1.2.3.4:53` or `[::1]:53`.
  std::string ToString() const;
  // The host alone: `1.2.3.4` or `::1`.
  std::string HostString() const;

  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  sockaddr* mutable_sockaddr_ptr() { return reinterpret_cast<sockaddr*>(&storage_); }
  // Length for bind/connect/sendto: sizeof(sockaddr_in) or sizeof(sockaddr_in6).
  socklen_t sockaddr_len() const;

  bool operator==(const SocketAddress& other) const;
  bool operator!=(const SocketAddress& other) const { return !(*this == other); }
  size_t Hash() const;

 private:
  sockaddr_storage storage_;
};

// The IP address of an AF_INET/AF_INET6 socket address, without its zone (v4-mapped IPv6
// is kept as IPv6: the kernel reports a dual-stack listener's IPv4 peers that way,
// consistently).
IpAddress IpOf(const SocketAddress& address);
// Its inverse: `address` and `port` as a socket address (no text round trip).
SocketAddress SocketAddressOf(const IpAddress& address, uint16_t port);

}  // namespace kdns::loop

template <>
struct std::hash<kdns::loop::SocketAddress> {
  size_t operator()(const kdns::loop::SocketAddress& a) const { return a.Hash(); }
};

// Internal socket helpers shared by UdpSocket and TcpListener: creating a bound
// non-blocking socket with the options libuv 1.44 cannot set before bind (SO_REUSEPORT,
// IPV6_V6ONLY), and reading an fd's local address. Not part of the public API.
#pragma once

#include <string>

#include "common/loop/socket_address.h"

namespace kdns::loop {

// Whether several sockets may bind the same address and port (SO_REUSEPORT), so that
// one loop per CPU core can each own a listening socket and the kernel spreads the load.
enum class ReusePort { kNo, kYes };

namespace internal {

// A non-blocking, close-on-exec socket of `type` (SOCK_DGRAM or SOCK_STREAM) bound to
// address; IPv6 sockets are IPV6_V6ONLY. Returns the fd, or -1 with *error set.
int CreateBoundSocket(int type, const SocketAddress& address, ReusePort reuse_port,
                      std::string* error);

// Makes an inherited fd non-blocking and close-on-exec and checks its type and family.
// Returns false with *error set if it is not an IPv4/IPv6 socket of `type`.
bool PrepareAdoptedSocket(int fd, int type, std::string* error);

// getsockname; the unspecified address on failure.
SocketAddress LocalAddressOf(int fd);

// "what: strerror(errno)" for error messages.
std::string ErrnoMessage(const std::string& what, int err);

}  // namespace internal
}  // namespace kdns::loop

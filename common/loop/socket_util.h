// Socket properties and helpers shared by UdpSocket and TcpListener: how a socket may be
// shared (SO_REUSEPORT; who else holds an fd handed over), creating a bound non-blocking
// socket with the options libuv 1.44 cannot set before bind (SO_REUSEPORT, IPV6_V6ONLY),
// and reading an fd's local address. The internal:: helpers are not part of the public API.
// Thread: any; these are plain system calls on an fd the caller owns.
#pragma once

#include <optional>
#include <string>

#include "common/loop/socket_address.h"

namespace kdns::loop {

// Whether several sockets may bind the same address and port (SO_REUSEPORT), so that
// one loop per CPU core can each own a listening socket and the kernel spreads the load.
enum class ReusePort { kNo, kYes };

// Whether a socket handed over as an fd was inherited from a parent process that keeps it
// open after we exit (the nanny holds its listening sockets for its next child). What is
// queued on such a socket belongs to whoever reads it next: a reader must not take
// datagrams it may not live to answer (a kill -9 would lose them), and must never shut the
// socket down. A socket this process bound dies with it, queue and all.
enum class Inherited { kNo, kYes };

// Whether other threads of this process serve dups of the same socket (one file
// description, one receive queue: DnsServer's inherited and shared sockets). No one of them
// may shut it down, since that would stop the others too.
enum class SharedBetweenThreads { kNo, kYes };

// Who else holds a socket handed over as an fd. The two are independent: DnsServer serves
// the nanny's inherited sockets from a dup in every thread (both), and its own shared
// sockets, bound here, from dups too (shared between threads only).
struct SocketSharing {
  Inherited inherited = Inherited::kNo;
  SharedBetweenThreads between_threads = SharedBetweenThreads::kNo;
};

// Port 0 (tests): how many ports a server tries for a UDP and TCP pair on one port, since
// the port the kernel gives the UDP socket may be taken for TCP.
inline constexpr int kPortZeroAttempts = 16;

// SO_REUSEPORT does not make a bind fail when another socket of the same user already
// serves the port with SO_REUSEPORT: the new socket silently joins that group and gets a
// share of its traffic (an old instance still running, or, with port 0, whichever group
// the kernel's UDP port choice lands on). So a server about to bind SO_REUSEPORT sockets
// first binds plain UDP and TCP sockets, which fail on any other socket, and closes them
// again. Returns the address with its port (chosen when 0, free for both protocols), or
// nullopt with a one-line *error ("UDP: bind 127.0.0.1:53: Address already in use").
std::optional<SocketAddress> ClaimAddress(const SocketAddress& address, std::string* error);

namespace internal {

// A non-blocking, close-on-exec socket of `type` (SOCK_DGRAM or SOCK_STREAM) bound to
// address; IPv6 sockets are IPV6_V6ONLY. Returns the fd, or -1 with *error set.
int CreateBoundSocket(int type, const SocketAddress& address, ReusePort reuse_port,
                      std::string* error);

// Makes a socket fd handed over (inherited or dup'd) non-blocking and close-on-exec and
// checks its type and family. Returns false with *error set if it is not an IPv4/IPv6
// socket of `type`.
[[nodiscard]] bool PrepareSocketFd(int fd, int type, std::string* error);

// getsockname; the unspecified address on failure.
SocketAddress LocalAddressOf(int fd);

// "what: strerror(errno)" for error messages.
std::string ErrnoMessage(const std::string& what, int err);

}  // namespace internal
}  // namespace kdns::loop

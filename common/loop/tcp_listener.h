// TcpListener: a listening TCP socket that hands each accepted connection to a callback
// as a TcpConnection the callback takes ownership of.
//
// Binds itself (so that SO_REUSEPORT and IPV6_V6ONLY can be set before bind, which libuv
// 1.44 cannot do) or takes a bound fd handed over (inherited from a parent process, or a
// dup shared with other threads: a listener behaves the same either way). At most
// Options::max_connections accepted connections are open at a time: beyond that, new
// connections are accepted and closed at once (counted in stats().rejected), so a flood
// costs neither memory nor a full backlog that would stall legitimate clients.
//
// A listening socket shut down by another holder (shutdown(2) on a dup, or in the nanny
// that handed it over) makes the listener close its fd and stop: listening() is then
// false, and the connections it accepted carry on.
//
// Thread: the loop's thread only. Connections may outlive the listener.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/socket_util.h"
#include "common/loop/tcp_connection.h"

namespace kdns::loop {

class TcpListener {
 public:
  struct Options {
    ReusePort reuse_port = ReusePort::kNo;
    int backlog = 128;
    size_t max_connections = 1024;
    TcpConnection::Options connection;  // applied to every accepted connection
  };

  struct Stats {
    uint64_t accepted = 0;
    uint64_t rejected = 0;  // over max_connections
    uint64_t errors = 0;    // failed accepts
  };

  // Receives each accepted connection; call Start() on it to begin reading.
  using AcceptCallback = std::function<void(std::unique_ptr<TcpConnection> connection)>;

  [[nodiscard]] static std::unique_ptr<TcpListener> Bind(Loop& loop, const SocketAddress& address,
                                                         const Options& options,
                                                         AcceptCallback callback,
                                                         std::string* error);
  // Takes ownership of a bound (possibly already listening) TCP socket and listens on it.
  // The fd is consumed even on failure (closed).
  [[nodiscard]] static std::unique_ptr<TcpListener> FromFd(Loop& loop, int fd,
                                                           const Options& options,
                                                           AcceptCallback callback,
                                                           std::string* error);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  SocketAddress GetLocalAddress() const;
  // The listening fd, e.g. to hand to a child process (ChildProcess::Options::extra_fds).
  int fd() const;
  size_t open_connections() const { return *open_connections_; }
  // False once the socket was shut down by another holder (see above).
  bool listening() const { return static_cast<bool>(handle_); }
  const Stats& stats() const { return stats_; }

 private:
  TcpListener(Loop& loop, const Options& options, AcceptCallback callback);
  [[nodiscard]] bool Listen(int fd, std::string* error);
  static void OnConnection(uv_stream_t* server, int status) noexcept;

  Loop& loop_;
  Options options_;
  AcceptCallback callback_;
  UvHandle<uv_tcp_t> handle_;
  // Shared with the connections, which decrement it when they close.
  std::shared_ptr<size_t> open_connections_ = std::make_shared<size_t>(0);
  Stats stats_;
};

}  // namespace kdns::loop

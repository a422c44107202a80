// Server: a small HTTP/1.1 server for /metrics, /healthz and /healthcheck/<label>, on a
// kdns::loop TCP listener.
//
// Why not libmicrohttpd: the requests are tiny GETs; the server must run on the program's
// own libuv loop (the sidecar is one loop) with no threads of its own; and every resource
// is bounded by construction, which is easy to see in ~300 lines and harder to prove for a
// general server's configuration. The parser is pure and fuzzed (request_parser.h).
//
// Bounds: at most Options::max_connections connections (more are closed at accept); a
// request head of at most max_request_bytes (431/414 beyond, 413 for bodies); a request
// must arrive in full within request_timeout_ms of its first byte, or the server answers
// 408 and closes (slowloris); a connection with no request is closed after
// idle_timeout_ms; one response per connection is in flight (reading pauses until it is
// written, which also orders pipelined requests), and its output must drain within
// request_timeout_ms or the connection is closed. Nothing ever blocks the loop.
//
// Routing: Handle(path) matches the path exactly; HandlePrefix(prefix) matches paths that
// start with prefix (the longest prefix wins); exact matches win over prefixes. GET and
// HEAD only (HEAD gets the GET headers without the body); other methods get 405 with
// `Allow: GET, HEAD`; unknown paths 404; a handler that throws, 500.
//
// Thread: the loop's thread; handlers run on it and must not block. Use ServerThread to run
// the server on a thread of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/http/request_parser.h"
#include "common/http/response.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/tcp_listener.h"

namespace kdns::http {

using Handler = std::function<Response(const Request& request)>;

class Server {
 public:
  struct Options {
    loop::SocketAddress bind_address = loop::SocketAddress::AnyV4(0);
    size_t max_request_bytes = 8 * 1024;
    uint64_t request_timeout_ms = 10'000;
    uint64_t idle_timeout_ms = 60'000;
    size_t max_connections = 64;
    size_t max_response_bytes = 16 << 20;  // per-connection pending output bound
  };

  struct Stats {
    uint64_t requests = 0;
    uint64_t bad_requests = 0;  // answered 4xx/5xx by the parser
    uint64_t timeouts = 0;
  };

  Server(loop::Loop& loop, const Options& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Routes; register before or after Start().
  void Handle(const std::string& path, Handler handler);
  void HandlePrefix(const std::string& prefix, Handler handler);

  // Binds and listens. False with *error (e.g. the port is in use).
  [[nodiscard]] bool Start(std::string* error);

  loop::SocketAddress GetLocalAddress() const;
  size_t open_connections() const { return connections_.size(); }
  const Stats& stats() const { return stats_; }

 private:
  class Connection;
  friend class Connection;

  void Accept(std::unique_ptr<loop::TcpConnection> tcp);
  Response Dispatch(const Request& request);
  void Remove(uint64_t id);

  loop::Loop& loop_;
  Options options_;
  RequestParser parser_;
  std::map<std::string, Handler> exact_;
  std::map<std::string, Handler> prefixes_;
  std::unique_ptr<loop::TcpListener> listener_;
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_id_ = 0;
  Stats stats_;
};

}  // namespace kdns::http

// Server: a small HTTP/1.1 server for /metrics, /healthz and /healthcheck/<label>, on a
// kdns::loop TCP listener.
//
// Why not libmicrohttpd: the requests are tiny GETs; the server must run on the program's
// own libuv loop (the sidecar is one loop) with no threads of its own; and every resource
// is bounded by construction, which is easy to see in ~300 lines and harder to prove for a
// general server's configuration. The parser is pure and fuzzed (request_parser.h).
//
// Bounds (DESIGN §7: whoever holds connections, the kubelet's probes are answered):
//   - at most Options::max_connections connections, and at most max_connections_per_source
//     from one source address. A newcomer over its source's cap closes that source's
//     oldest idle connection (idle longest: between requests, nothing of a request read).
//     A newcomer over the server's cap closes the oldest idle connection of its own source
//     or of a source holding at least two connections more than its own; failing that, the
//     oldest slow request (a head still arriving) of such a heavier source. So many
//     sources, each holding idle or slow connections up to its cap, cannot shut out one
//     that holds one or none (the kubelet's probe), and sources at their share do not
//     take slots from each other. Otherwise the newcomer is closed at accept. A response
//     being written is never closed for a newcomer, nor a request being read for one of
//     its own source. Idle connections are what a flood of keep-alive clients holds; slow
//     ones (below) last request_timeout_ms each;
//   - a connection with no request under way is closed after idle_timeout_ms (a short
//     keep-alive: probes do not keep connections, scrapers reconnect cheaply);
//   - a request head of at most max_request_bytes (431/414 beyond, 413 for bodies); it
//     must arrive in full within request_timeout_ms of its first byte, however the bytes
//     trickle in, or the server answers 408 and closes (slowloris);
//   - one response per connection is in flight (reading pauses until it is written, which
//     also orders pipelined requests), of at most max_response_bytes, and its output must
//     drain within request_timeout_ms or the connection is closed.
// Each cap hit and each timeout of a started request is counted by limits::RecordLimitHit
// (http_connections, http_connections_per_source, http_request_timeout). Nothing ever
// blocks the loop.
//
// Routing: by its Routes (routes.h): exact paths, else the longest prefix. GET and
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
#include <unordered_map>

#include "common/http/request_parser.h"
#include "common/http/response.h"
#include "common/http/routes.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/tcp_listener.h"

namespace kdns::http {

class Server {
 public:
  struct Options {
    loop::SocketAddress bind_address = loop::SocketAddress::AnyV4(0);
    // kYes: another process may bind the same address (a node cache's update, maxSurge).
    loop::ReusePort reuse_port = loop::ReusePort::kNo;
    size_t max_request_bytes = 8 * 1024;
    uint64_t request_timeout_ms = 5'000;
    uint64_t idle_timeout_ms = 5'000;
    size_t max_connections = 128;
    size_t max_connections_per_source = 8;
    // The largest response (one is in flight per connection); /metrics is tens of KiB.
    size_t max_response_bytes = 4 << 20;
  };

  struct Stats {
    uint64_t accepted = 0;  // connections admitted under the caps
    uint64_t requests = 0;
    uint64_t bad_requests = 0;  // answered 4xx/5xx by the parser
    uint64_t timeouts = 0;
    uint64_t idle_closed_at_cap = 0;  // the oldest idle connection closed for a newcomer
    uint64_t slow_closed_at_cap = 0;  // a slow request of the heaviest source closed for one
    uint64_t refused = 0;             // newcomers closed at accept: a cap with none idle
  };

  // `routes`: those registered before the server exists (ServerThread's); more may follow.
  Server(loop::Loop& loop, const Options& options, Routes routes = Routes());
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Routes; register before or after Start().
  void Handle(const std::string& path, Handler handler);
  void HandlePrefix(const std::string& prefix, Handler handler);

  // Binds and listens. False with *error (e.g. the port is in use).
  [[nodiscard]] bool Start(std::string* error);

  loop::SocketAddress GetLocalAddress() const;
  // Connections counted against the caps (those being closed are not).
  size_t open_connections() const { return open_; }
  // Of those, the ones between requests (what a newcomer at a cap may close).
  size_t idle_connections() const;
  const Stats& stats() const { return stats_; }

 private:
  class Connection;
  friend class Connection;

  void Accept(std::unique_ptr<loop::TcpConnection> tcp);
  // At `source`'s cap: closes its connection idle longest; false if none is idle.
  bool CloseOldestIdle(const std::string& source);
  // At the server's cap: closes the connection idle longest of the newcomer's source or of
  // a source holding at least two connections more; else the oldest slow request of such
  // a source; false if there is none.
  bool CloseForNewcomerAtServerCap(const std::string& newcomer);
  // A connection stops counting against the caps (it is closing).
  void Uncount(const std::string& source);
  Response Dispatch(const Request& request);
  void Remove(uint64_t id);

  loop::Loop& loop_;
  Options options_;
  RequestParser parser_;
  Routes routes_;
  std::unique_ptr<loop::TcpListener> listener_;
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;
  // Counted connections: in total and by source address (no entry at zero).
  size_t open_ = 0;
  std::unordered_map<std::string, size_t> open_by_source_;
  uint64_t next_id_ = 0;
  uint64_t next_phase_sequence_ = 0;  // orders connections by when they entered their phase
  Stats stats_;
};

}  // namespace kdns::http

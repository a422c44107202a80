#include "common/server/debug_http.h"

#include <utility>

#include "common/http/server.h"
#include "common/limits/limits.h"

namespace kdns::server {
namespace {

// kubedns's /cache of a large cluster is a few MiB (kubedns/records/cache_dump.h bounds it); one
// response at a time per connection, from an operator's port-forward.
constexpr size_t kDebugMaxResponseBytes = 16 << 20;

bool IsLoopback(const loop::SocketAddress& address) {
  const std::string host = address.HostString();
  return address.is_v4() ? host.starts_with("127.") : host == "::1";
}

}  // namespace

bool ParseDebugAddress(std::string_view value, std::string_view flag,
                       std::optional<loop::SocketAddress>* address, std::string* error) {
  std::optional<loop::SocketAddress> parsed = loop::SocketAddress::Parse(value);
  if (!parsed) {
    *error = "--" + std::string(flag) + ": not an IP address and port (127.0.0.1:10057): \"" +
             std::string(value) + "\"";
    return false;
  }
  *address = parsed;
  return true;
}

std::string DebugAddressClash(const loop::SocketAddress& debug, std::string_view other_flag,
                              const loop::SocketAddress& other) {
  const bool overlap = debug.IsWildcard() || other.IsWildcard() || debug == other;
  if (debug.port() == 0 || debug.port() != other.port() || !overlap) return {};
  return "--" + std::string(kDebugAddressFlag) + "=" + debug.ToString() + " takes the port of " +
         std::string(other_flag) + " (" + other.ToString() +
         "): the debug data needs a port of its own";
}

std::string DebugAddressWarning(std::string_view flag, const loop::SocketAddress& address) {
  if (IsLoopback(address)) return {};
  return "--" + std::string(flag) + "=" + address.ToString() +
         " is not loopback: whoever reaches it reads the debug data (other pods' addresses "
         "and rates, the record tree)";
}

std::unique_ptr<http::ServerThread> MakeDebugServer(const loop::SocketAddress& address,
                                                    std::shared_ptr<const ClientLimiter> clients) {
  http::Server::Options options;
  options.bind_address = address;
  options.max_response_bytes = kDebugMaxResponseBytes;
  auto server = std::make_unique<http::ServerThread>(options);
  server->Handle("/debug/top-clients",
                 [clients = std::move(clients)](const http::Request& request) {
                   return TopClientsResponse(*clients, request);
                 });
  return server;
}

http::Response DebugPathRefused(const http::Request& request) {
  limits::RecordLimitHit(limits::Limit::kDebugOnPublishedPort, request.path);
  return http::Response::Text(404, "not found: debug data is served only on --debug-address\n");
}

}  // namespace kdns::server

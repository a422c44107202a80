// Debug data on its own address (DESIGN §7, "Tenants"). /debug/top-clients (the heaviest
// clients: pod IPs and their rates) and kubedns's /cache (every Service and endpoint) tell
// one tenant about the others, and every pod can reach every port of a DNS pod (the
// kube-dns Service publishes the metrics port too). So debug data is served only on an
// opt-in debug address, one flag in both DNS servers:
//
//   --debug-address=IP:PORT   off by default; keep it on loopback (127.0.0.1:10057) and
//                             reach it with `kubectl port-forward`
//
// and every other HTTP port answers /debug/* and /cache with 404, counted as
// kdns_limit_hits_total{limit="debug_on_published_port"} so an operator sees who still
// asks there.
//
//   ParseDebugAddress   the flag's value (kubedns also accepts its old name,
//                       --cache-dump-address, for the same address), and
//   DebugAddressClash   its check against the program's other HTTP ports
//   MakeDebugServer     an http::ServerThread on the debug address with
//                       /debug/top-clients; the program adds its own routes (/cache)
//   RefuseDebugPaths    the 404s on an HTTP port that is not the debug address
//
// Thread: the helpers run on the owning thread, before the servers start; the handlers
// run on their HTTP thread and read only thread-safe state (the ClientLimiter).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/http/request_parser.h"
#include "common/http/response.h"
#include "common/http/server_thread.h"
#include "common/loop/socket_address.h"
#include "common/server/rate_limits.h"

namespace kdns::server {

inline constexpr std::string_view kDebugAddressFlag = "debug-address";
// Where a program serves its debug data when the kube-dns ConfigMap's kdns.debugData asks
// for it without --debug-address: loopback, on the program's own port (kubedns 10057,
// frontend-cache 10058: both in one pod).
inline constexpr std::string_view kDefaultDebugHost = "127.0.0.1";

// Parses an --debug-address value (`127.0.0.1:10057`, `[::1]:10057`; port 0: any free
// port) into *address. `flag` names the flag in the error ("debug-address", or kubedns's
// old "cache-dump-address"). False with a one-line *error.
[[nodiscard]] bool ParseDebugAddress(std::string_view value, std::string_view flag,
                                     std::optional<loop::SocketAddress>* address,
                                     std::string* error);

// The one-line error when the debug address would take `other` (the address of the port
// `other_flag` names: a metrics or health port): the same port on the same or a wildcard
// address, which could not both be bound; empty otherwise (port 0 never clashes).
std::string DebugAddressClash(const loop::SocketAddress& debug, std::string_view other_flag,
                              const loop::SocketAddress& other);

// The warning a program logs at start-up for a debug address that is not loopback (every
// pod that reaches it reads the debug data); empty for loopback.
std::string DebugAddressWarning(std::string_view flag, const loop::SocketAddress& address);

// The debug address's server, not started, with /debug/top-clients of `clients`. Its
// responses may be larger than a metrics port's (kubedns's /cache of a large cluster is a
// few MiB).
std::unique_ptr<http::ServerThread> MakeDebugServer(const loop::SocketAddress& address,
                                                    std::shared_ptr<const ClientLimiter> clients);

// What a port other than the debug address answers for a debug path: 404, and the hit
// counted (limits::Limit::kDebugOnPublishedPort).
http::Response DebugPathRefused(const http::Request& request);

// Routes /debug/* and /cache of `server` (an http::Server or http::ServerThread, before it
// starts) to DebugPathRefused.
template <typename HttpServer>
void RefuseDebugPaths(HttpServer& server) {
  server.HandlePrefix("/debug", DebugPathRefused);
  server.HandlePrefix("/cache", DebugPathRefused);
}

}  // namespace kdns::server

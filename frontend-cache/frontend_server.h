// FrontendServer: the frontend-cache program without its command line, so tests can run it
// in-process.
//
// Threads:
//   DNS threads     one server::DnsServer per listening address, `threads` loops each; every
//                   loop has its own Handler with its own upstream::Forwarder (upstream
//                   sockets, coalescing, the forward cap: all per thread, no lock)
//   HTTP thread     /metrics and /healthz on --prometheus-port, when set
//   caller          Start, Reload (SIGHUP), StatsText (SIGUSR1), Stop
// Shared between threads: the Cache (sharded, thread-safe), the routing (an immutable
// RoutingState published through a SnapshotHolder, read without a lock), the
// UpstreamTable (per-upstream counters and loop verdicts) and per-thread metric counters.
//
// Reload re-reads --servers-file and the resolv.conf file and swaps in the new routing at
// once; the cache keeps every entry whose route did not change (DiffRoutes). A bad file is
// rejected with a one-line error and the running configuration is kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "common/base/ip_address.h"
#include "common/base/snapshot_holder.h"
#include "common/http/server_thread.h"
#include "common/loop/socket_address.h"
#include "common/metrics/registry.h"
#include "common/server/dns_server.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/upstream_set.h"
#include "common/upstream/upstream_table.h"
#include "frontend-cache/cache.h"
#include "frontend-cache/chaos.h"
#include "frontend-cache/metrics.h"
#include "frontend-cache/options.h"
#include "frontend-cache/routing.h"

namespace kdns::frontend {

// One routing configuration, as the DNS threads see it.
struct RoutingState {
  RoutingTable table;
  // The Forwarder's form of each route's upstreams: [i] for table.domain_routes()[i].
  std::vector<upstream::UpstreamSet> domain_sets;
  upstream::UpstreamSet default_set;
  // Every upstream once, in the order dnsmasq lists them in servers.bind: the --server
  // options as given (command line, then --servers-file), then resolv.conf's.
  std::vector<upstream::UpstreamAddress> listing_order;
  uint64_t generation = 0;

  const upstream::UpstreamSet& SetFor(const Route& route) const;
};

class FrontendServer {
 public:
  struct Options {
    frontend::Options flags;
    // Listening sockets inherited from the parent (pairs of UDP and TCP fds); when set,
    // flags.listen_addresses and flags.port are not bound.
    std::vector<server::DnsServer::InheritedSockets> inherited;
    // The host's interface addresses, for the start-up check that no upstream is us.
    std::vector<IpAddress> local_addresses;
    upstream::Forwarder::Options forwarder;
  };

  explicit FrontendServer(Options options, const Clock& clock = SteadyClock::Instance());
  ~FrontendServer();
  FrontendServer(const FrontendServer&) = delete;
  FrontendServer& operator=(const FrontendServer&) = delete;

  // Reads the configuration, checks it, binds every socket and starts every thread. False
  // with a one-line *error (a bad servers file, an upstream that is ourselves, a port in
  // use) and nothing left running.
  [[nodiscard]] bool Start(std::string* error);
  // SIGHUP: re-reads --servers-file and resolv.conf. False with *error when the new
  // configuration is rejected (the old one keeps running).
  bool Reload(std::string* error);
  void Stop();

  // The /metrics body: our registry, then --metrics-textfile when it is valid.
  std::string RenderMetrics() const;

  // SIGUSR1: cache and per-upstream statistics, several lines.
  std::string StatsText() const;

  // Summed over every DnsServer and thread.
  server::ServerStats server_stats() const;
  // The addresses served (after Start), one per DnsServer.
  std::vector<loop::SocketAddress> addresses() const;
  const loop::SocketAddress& metrics_address() const;
  metrics::Registry& registry() { return registry_; }
  const Cache& cache() const { return cache_; }
  upstream::UpstreamTable& upstream_table() { return *upstream_table_; }
  std::shared_ptr<const RoutingState> routing() const { return routing_.Current(); }
  // Summed over the Forwarders of every thread.
  struct ForwardTotals {
    uint64_t requests = 0, coalesced = 0, overloaded = 0, tries = 0, timeouts = 0, failovers = 0,
             mismatched = 0, malformed = 0, tcp_retries = 0, in_flight = 0;
  };
  ForwardTotals forward_totals() const;

 private:
  class Handler;

  bool BuildRouting(RoutingState* state, std::string* error) const;
  ChaosStats ChaosStatsNow() const;
  void ProbeForLoops();
  void RegisterMetrics();
  void AddHandler(Handler* handler);
  void RemoveHandler(Handler* handler);

  Options options_;
  const Clock& clock_;
  metrics::Registry registry_;
  FrontendMetrics metrics_;
  Cache cache_;
  const CachePolicy cache_policy_;
  metrics::Counter* metrics_reloads_ = nullptr;
  metrics::Counter* metrics_reload_rejected_ = nullptr;
  std::shared_ptr<upstream::UpstreamTable> upstream_table_;
  SnapshotHolder<RoutingState> routing_;
  uint64_t routing_generation_ = 0;
  std::vector<std::unique_ptr<server::DnsServer>> servers_;
  std::unique_ptr<http::ServerThread> metrics_http_;

  mutable std::mutex handlers_mu_;
  std::vector<Handler*> handlers_;  // Guarded by handlers_mu_; each used on its own thread
  // Totals of handlers already destroyed, so summed counters never go down.
  ForwardTotals retired_totals_;  // Guarded by handlers_mu_.
};

}  // namespace kdns::frontend

// FrontendServer: the frontend-cache program without its command line, so tests can run it
// in-process.
//
// Threads:
//   DNS threads     one server::DnsServer per listening address, `threads` loops each; every
//                   loop has its own DnsHandler (dns_handler.h) with its own
//                   upstream::Forwarder (upstream sockets and coalescing per thread; the
//                   forwarding budgets are shared by the process)
//   HTTP threads    /metrics and /healthz on --prometheus-port, when set (it answers
//                   /debug/* 404); /debug/top-clients on --debug-address, when set or
//                   when kdns.debugData asks (switchboard_), on a thread and port of its
//                   own (common/server/debug_http.h)
//   hosts watcher   ReloadHostsFiles when a hosts file changes (hosts_watcher.h)
//   caller          Start, Reload (SIGHUP), StatsText (SIGUSR1), Stop
// Shared between threads: the Cache (sharded, thread-safe), the routing (an immutable
// RoutingState published through a SnapshotHolder, read without a lock), the
// UpstreamTable (per-upstream counters and loop verdicts) and per-thread metric counters.
//
// Reload re-reads --servers-file, the resolv.conf file and the hosts files and swaps in the
// new routing and local answers at once; the cache keeps every entry whose route did not change
// (DiffRoutes). A bad file is rejected with a one-line error and the running configuration is kept.
// The hosts files are also re-read when they change (HostsWatcher, on a thread of its own,
// --hosts-reload), and only the local answers are swapped; a hosts file that cannot be read
// or has a bad line keeps its previous version (HostsFiles). Reload and the hosts watcher
// publish under one lock, so neither undoes the other. The servers file also carries the
// kube-dns ConfigMap's runtime switches (query log, debug data), applied at each Reload by
// the Switchboard (common/server/switchboard.h).
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
#include "common/metrics/coredns_compat.h"
#include "common/metrics/registry.h"
#include "common/server/dns_server.h"
#include "common/server/query_log.h"
#include "common/server/switchboard.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_totals.h"
#include "common/upstream/upstream_set.h"
#include "common/upstream/upstream_table.h"
#include "frontend-cache/cache.h"
#include "frontend-cache/dns_handler.h"
#include "frontend-cache/hosts_files.h"
#include "frontend-cache/hosts_watcher.h"
#include "frontend-cache/metrics.h"
#include "frontend-cache/options.h"
#include "frontend-cache/routing.h"
#include "frontend-cache/zone_serials.h"

namespace kdns::frontend {

class FrontendServer {
 public:
  struct Options {
    frontend::Options flags;
    // Listening sockets inherited from the parent, per address: one pair of UDP and TCP
    // fds, or a pair per thread (DnsServer::Options::inherited); when set,
    // flags.listen_addresses and flags.port are not bound.
    std::vector<std::vector<server::DnsServer::InheritedSockets>> inherited;
    // The host's interface addresses, for the start-up check that no upstream is us.
    std::vector<IpAddress> local_addresses;
    upstream::Forwarder::Options forwarder;
  };

  // `query_log_sink` receives the --log-queries lines (tests count them); glog by default.
  explicit FrontendServer(Options options, const Clock& clock = SteadyClock::Instance(),
                          server::QueryLog::Sink query_log_sink = server::QueryLog::GlogSink());
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

  // The /metrics body: our registry (with CoreDNS's families derived from it under
  // --metrics-compat=coredns), then --metrics-textfile when it is valid.
  std::string RenderMetrics() const;

  // SIGUSR1: cache and per-upstream statistics, several lines.
  std::string StatsText() const;

  // Summed over every DnsServer and thread.
  server::ServerStats server_stats() const;
  // The addresses served (after Start), one per DnsServer.
  std::vector<loop::SocketAddress> addresses() const;
  const loop::SocketAddress& metrics_address() const;
  // Where the debug data is served; unspecified without --debug-address.
  loop::SocketAddress debug_address() const;
  metrics::Registry& registry() { return registry_; }
  const Cache& cache() const { return cache_; }
  const server::QueryLog& query_log() const { return query_log_; }
  upstream::UpstreamTable& upstream_table() { return *upstream_table_; }
  std::shared_ptr<const RoutingState> routing() const { return routing_.Current(); }
  // Summed over the Forwarders of every thread.
  upstream::ForwardTotals forward_totals() const;

 private:
  // Reads the servers file (with the runtime switches it carries: switchboard_), resolv.conf
  // and the routes; the hosts files as hosts_files_ last read them.
  bool BuildRouting(RoutingState* state, config::RuntimeSwitches* switches,
                    std::string* error) const;
  void ProbeForLoops();
  void RegisterMetrics();
  // Which of our families --metrics-compat=coredns derives CoreDNS's from.
  metrics::CorednsSources CorednsSources() const;
  // The hosts watcher's call: re-reads the hosts files and publishes new local answers
  // when they changed.
  void ReloadHostsFiles();
  void CountHostsRead(const HostsFiles::Outcome& outcome);

  Options options_;
  const Clock& clock_;
  metrics::Registry registry_;
  FrontendMetrics metrics_;
  Cache cache_;
  const CachePolicy cache_policy_;
  ZoneSerials zone_serials_;  // NOTIFY and the SOA poll (zone_serials.h)
  metrics::Counter* metrics_reloads_ = nullptr;
  metrics::Counter* metrics_reload_rejected_ = nullptr;
  std::shared_ptr<upstream::UpstreamTable> upstream_table_;
  server::QueryLog query_log_;
  // The kube-dns ConfigMap's runtime switches, from the servers file the nanny writes: the
  // query log's detail and the debug data (--debug-address, kdns.debugData).
  server::Switchboard switchboard_;
  // Held while the hosts files are read and a routing state is built and published
  // (Start, Reload, ReloadHostsFiles): guards hosts_files_ and routing_generation_.
  std::mutex reload_mutex_;
  HostsFiles hosts_files_;
  SnapshotHolder<RoutingState> routing_;
  uint64_t routing_generation_ = 0;
  metrics::Counter* metrics_hosts_reloads_ = nullptr;
  metrics::Counter* metrics_hosts_rejected_ = nullptr;
  HandlerList handlers_;
  upstream::ForwarderTotals forwarder_totals_;
  // What every thread's DnsHandler shares (references to the members above).
  std::unique_ptr<DnsHandler::Shared> handler_shared_;
  server::RateLimits rate_limits_;  // shared by every DnsServer
  std::vector<std::unique_ptr<server::DnsServer>> servers_;
  std::unique_ptr<http::ServerThread> metrics_http_;
  std::unique_ptr<HostsWatcher> hosts_watcher_;  // null under --hosts-reload=0
};

}  // namespace kdns::frontend

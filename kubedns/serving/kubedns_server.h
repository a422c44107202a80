// KubednsServer: the kubedns program without its flags, so tests can run it in-process.
//
// Threads:
//   source thread   owns a loop, the record source (the objects file, or the Kubernetes API
//                   through libcurl) and the RecordTreeWriter; every change is published as
//                   a new Snapshot; with --notify, NotifySender (notify_sender.h) tells
//                   the caches in front when a snapshot changed the records
//   DNS threads     server::DnsServer, one loop each, with a DnsHandler: every query reads
//                   the current snapshot through a SnapshotHolder::Reader (no lock) and is
//                   answered by the Answerer into the thread's buffer; names kubedns does
//                   not own go to the upstreams through the thread's upstream::Forwarder
//                   (all Forwarders share one UpstreamTable)
//   config thread   ForwardConfig (a libuv loop): re-reads --config-dir when it changes
//                   and with resolv.conf every --config-period, resolves stub host names
//                   with c-ares and, on a change, posts the new UpstreamRoutes to every
//                   DNS thread (DnsServer::Post)
//   HTTP thread(s)  /readiness and /healthz on the healthz port, /metrics on the metrics
//                   port (one thread when the ports are equal), and the debug data
//                   (/cache, /debug/top-clients) only when --debug-address or the
//                   ConfigMap's kdns.debugData asks for it, on a thread and port of its
//                   own (common/server/debug_http.h), started and stopped by the Switchboard; the
//                   other ports answer those paths 404
// Data crosses threads only as immutable snapshots (records, routes), per-thread metric
// counters and the atomic ready flag.
//
// Readiness turns on after the source's first complete set; until then cluster-zone
// queries are answered SERVFAIL. Liveness (/healthz) never depends on the source.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/snapshot_holder.h"
#include "common/dns/loadbalance.h"
#include "common/http/server_thread.h"
#include "common/k8s/api_config.h"
#include "common/loop/socket_address.h"
#include "common/metrics/coredns_compat.h"
#include "common/metrics/registry.h"
#include "common/server/dns_server.h"
#include "common/server/rate_limits.h"
#include "common/server/switchboard.h"
#include "common/server/waiting_queries.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/forwarder_totals.h"
#include "common/upstream/upstream_table.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/answering/autopath.h"
#include "kubedns/records/import_limits.h"
#include "kubedns/records/object_filter.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/serving/autopath_metrics.h"
#include "kubedns/serving/dns_handler.h"
#include "kubedns/serving/forward_config.h"
#include "kubedns/serving/forward_metrics.h"
#include "kubedns/serving/metrics.h"
#include "kubedns/serving/upstream_routes.h"
#include "kubedns/sources/api_source.h"

namespace kdns::kubedns {

// Where the debug data is served when the kube-dns ConfigMap's kdns.debugData asks for it
// without --debug-address (frontend-cache's is 10058 in the same pod).
inline constexpr uint16_t kDefaultDebugPort = 10057;

class KubednsServer {
 public:
  struct Options {
    AnswerConfig answer;
    loop::SocketAddress dns_address;  // --dns-bind-address, --dns-port
    size_t dns_threads = 0;           // 0: DefaultThreads() (cpu_quota.h)
    // UDP is received on a receiver thread per socket, which answers what the records
    // answer (DnsHandler::AnswerOnReceiverThread); up to two DNS threads share one socket,
    // so their receivers take turns, more have a socket each (server::DnsServer).
    // --receiver-threads.
    bool receiver_threads = true;
    loop::SocketAddress healthz_address;  // /readiness, /healthz
    loop::SocketAddress metrics_address;  // /metrics
    // --debug-address: /cache (the whole record tree) and /debug/top-clients, served only
    // when set, never on the healthz or metrics port, which every pod can reach
    // (docs/operators.md, "HTTP").
    std::optional<loop::SocketAddress> debug_address;
    std::string objects_file;  // the offline source, if set
    uint64_t objects_poll_ms = 2000;
    std::optional<k8s::ApiConfig> api_config;  // otherwise the Kubernetes API
    ApiSource::Options api;
    std::string metrics_prefix = "skydns_skydns";
    // --metrics-compat=coredns: /metrics also carries CoreDNS's families, derived from ours
    // (common/metrics/coredns_compat.h).
    metrics::MetricsCompat metrics_compat = metrics::MetricsCompat::kNone;
    // Forwarding (names kubedns does not own).
    std::string config_dir;  // --config-dir: the kube-dns ConfigMap; empty: none
    uint64_t config_period_ms = 10'000;
    std::vector<upstream::Upstream> nameservers;  // --nameservers
    // --route-options (common/upstream/route_options.h), before kdns.routeOptions.
    std::vector<upstream::RouteOptionsEntry> route_options;
    // --notify: told of each change of the records (notify_sender.h), from the source thread.
    std::vector<loop::SocketAddress> notify_targets;
    std::string resolv_conf = "/etc/resolv.conf";
    upstream::Forwarder::Options forwarder;  // budgets: whole process (--forward-max...)
    server::TcpOptions tcp;                  // DNS over TCP limits (--tcp-*)
    // Waiting queries (common/server/waiting_queries.h): --max-waiting-queries.
    size_t max_waiting_queries = server::WaitingBudget::kDefaultMax;
    // Per-client rate limit and RRL, checked by BuildOptions (--client-rate-*, --rrl-*).
    server::RateLimitFlags rate_limits;
    // Whose client-address option names the client (--client-address-from, -option):
    // frontend-cache's, on loopback.
    server::ClientAddressPolicy client_address;
    server::QueryLogOptions query_log;  // --log-queries, --log-queries-rate/-sample
    // --autopath (autopath.h) and --autopath-search: the node's domains; nullopt: the
    // search list of resolv_conf, read once at start-up.
    bool autopath = false;
    std::optional<std::vector<dns::Name>> autopath_search;
    // Bounds on one multicluster ServiceImport (--import-max-*).
    ImportLimits import_limits;
    // --loadbalance: answers from the records rotate their A/AAAA RRsets.
    dns::LoadBalance loadbalance = dns::LoadBalance::kOff;
    // Which objects are served and how endpoints are named (--namespaces, --labels,
    // --endpoint-pod-names; records/object_filter.h).
    ObjectFilterOptions filter;
  };

  explicit KubednsServer(Options options);
  ~KubednsServer();
  KubednsServer(const KubednsServer&) = delete;
  KubednsServer& operator=(const KubednsServer&) = delete;

  // Binds every port and starts every thread; false with a one-line *error otherwise.
  [[nodiscard]] bool Start(std::string* error);
  // Fails readiness from now on (the first step of a graceful shutdown).
  void StartLameduck() { lameduck_ = true; }
  void Stop();

  bool ready() const { return synced_.load() && !lameduck_.load(); }
  const loop::SocketAddress& dns_address() const { return dns_server_->local_address(); }
  const loop::SocketAddress& healthz_address() const { return healthz_http_->local_address(); }
  const loop::SocketAddress& metrics_address() const;
  // Where the debug data is served; unspecified without Options::debug_address.
  loop::SocketAddress debug_address() const;
  std::shared_ptr<const Snapshot> snapshot() const { return snapshots_.Current(); }
  metrics::Registry& registry() { return registry_; }
  // The forwarding routes last published to the DNS threads.
  std::shared_ptr<const UpstreamRoutes> routes() const;

 private:
  // Which of our families --metrics-compat=coredns derives CoreDNS's from.
  metrics::CorednsSources CorednsSources() const;
  class Publisher;

  void RunSource(std::promise<void>* started);
  void RegisterMetrics();
  // Publishes `routes` to the DNS threads (from the config thread, or Start's first pass),
  // as the records are: a query forwarded after it takes them, one forwarded before
  // finishes with the routes it started with.
  void PublishRoutes(const std::shared_ptr<const UpstreamRoutes>& routes);
  // The debug address's server: server::MakeDebugServer's routes and /cache (Switchboard
  // makes it when --debug-address or kdns.debugData asks).
  std::unique_ptr<http::ServerThread> MakeDebugServer(const loop::SocketAddress& address);

  Options options_;
  metrics::Registry registry_;
  // Counted by the Publisher on the source thread (records/object_filter.h).
  metrics::Counter* filtered_objects_ = nullptr;
  metrics::Counter* invalid_pod_names_ = nullptr;
  Answerer answerer_;
  DnsMetrics dns_metrics_;
  std::shared_ptr<upstream::UpstreamTable> upstream_table_;
  ForwardMetrics forward_metrics_;
  upstream::ForwarderTotals forwarder_totals_;  // every DNS thread's forwarder
  // Set with --autopath only.
  std::unique_ptr<const Autopath> autopath_;
  std::unique_ptr<AutopathMetrics> autopath_metrics_;
  SnapshotHolder<Snapshot> snapshots_;
  SnapshotHolder<UpstreamRoutes> routes_;
  server::QueryLog query_log_;
  // The kube-dns ConfigMap's runtime switches, from ForwardConfig (the config thread): the
  // query log's detail and the debug data (--debug-address, kdns.debugData).
  server::Switchboard switchboard_;
  DnsHandler::Shared handler_shared_;
  server::RateLimits rate_limits_;  // shared by every DNS thread
  std::unique_ptr<ForwardConfig> forward_config_;

  std::atomic<bool> synced_{false};
  std::atomic<bool> lameduck_{false};
  std::atomic<uint64_t> last_publish_unix_ms_{0};

  std::unique_ptr<server::DnsServer> dns_server_;
  std::unique_ptr<http::ServerThread> healthz_http_;
  std::unique_ptr<http::ServerThread> metrics_http_;  // null when it shares healthz_http_

  std::thread source_thread_;
  loop::TaskQueue::Poster source_poster_;
  std::atomic<bool> source_running_{false};
};

}  // namespace kdns::kubedns

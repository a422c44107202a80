// kubedns's command line: kube-dns's flag names, defaults and meanings, plus ours. main.cc
// defines the gflags and copies their values into FlagValues; BuildOptions() checks every
// value and builds the server's options, so that each bad value stops the program at start
// with one line naming the flag (the same line --check-flags prints).
//
// Reads files only for the Kubernetes API configuration (a kubeconfig, or the in-cluster
// service account), which --check-flags skips in-cluster: that comes from the pod, not from
// the flags. Thread: any; no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/k8s/api_config.h"
#include "kubedns/serving/kubedns_server.h"

namespace kdns::kubedns {

// The flags as gflags holds them, before validation. Defaults are main.cc's (kube-dns's).
struct FlagValues {
  std::string domain = "cluster.local.";
  int64_t dns_port = 10053;
  std::string dns_bind_address = "0.0.0.0";
  int64_t healthz_port = 8081;
  std::string config_dir;
  std::string config_period = "10s";
  std::string initial_sync_timeout = "60s";
  std::string nameservers;
  std::string notify;  // --notify: where to send NOTIFY when the records change
  // --route-options: entries separated by spaces (common/upstream/route_options.h).
  std::string route_options;
  std::string kubecfg_file;
  std::string kube_master_url;
  std::string endpoints_source = "endpointslices";
  std::string api_backoff_max = "30s";
  std::string api_stall_timeout = "90s";
  double api_qps = 5;  // client-go's default (rest.Config QPS)
  int64_t api_burst = 10;
  std::string api_relist_jitter = "5s";
  bool api_watch_list = false;  // client-go's WatchListClient default
  std::string objects_file;
  std::string multicluster_zone;  // empty: clusterset.local. is not served
  std::string kubeslice_zone;     // empty: slice.local. is not served
  bool zonal = false;             // --zonal: zone-scoped names of headless services
  // --external-zone: comma-separated zones of k8s_external-style names; empty: off.
  std::string external_zone;
  int64_t external_ttl = 5;  // k8s_external's default
  // --external-ns-service: NAMESPACE/NAME of the Service whose external addresses
  // ns1.dns.<external zone> answers; empty: none.
  std::string external_ns_service = "kube-system/kube-dns";
  // Which objects are served, and endpoint names (records/object_filter.h).
  std::string namespaces;  // comma-separated; empty: all
  std::string labels;      // a label selector; empty: all
  bool endpoint_pod_names = false;
  // Bounds on one ServiceImport (records/import_limits.h); defaults are ImportLimits'.
  int64_t import_max_aliases = 100;
  int64_t import_max_endpoints = 5000;
  int64_t import_max_bytes = 512 * 1024;
  int64_t ttl = 30;
  int64_t dns_threads = 0;
  std::string receiver_threads = "auto";  // auto|on|off, as frontend-cache's
  std::string pod_records = "insecure";
  int64_t prometheus_port = -1;  // -1: $PROMETHEUS_PORT, else 10055
  int64_t metrics_port = -1;     // the deprecated old name of --prometheus-port
  std::string http_bind_address = "0.0.0.0";
  std::string debug_address;  // empty: no debug data (/cache, /debug/*) is served
  // The old name of --debug-address (it served /cache only): the same address, with a
  // warning; both given must agree.
  std::string cache_dump_address;
  std::string lameduck = "0s";
  std::string resolv_conf = "/etc/resolv.conf";
  // Forwarding budgets (common/upstream/forward_budgets.h); 0 per route or upstream: a
  // quarter of forward_max.
  int64_t forward_max = 4096;
  int64_t forward_max_per_route = 0;
  int64_t forward_max_per_upstream = 0;
  std::string metrics_compat = "none";  // none|coredns (common/metrics/coredns_compat.h)
  std::string upstream_0x20 = "auto";   // auto|on|off (common/upstream/dns0x20.h)
  std::string loadbalance = "off";      // round_robin|off (common/dns/loadbalance.h)
  std::string tls_ca_file;              // tls:// upstreams' CA bundle (PEM); empty: the system's
  // Percent of each route and upstream budget kept for clients holding less than the
  // average (each client's fair share); 0: off.
  int64_t forward_client_reserve =
      static_cast<int64_t>(upstream::ForwardBudgets::kDefaultClientReservePercent);
  // DNS over TCP limits (docs/operators.md, "Limits"); defaults are server::TcpOptions'.
  std::string tcp_idle_timeout = "10s";
  std::string tcp_frame_timeout = "2s";
  std::string tcp_query_timeout = "5s";
  int64_t tcp_max_connections = 256;
  int64_t tcp_max_connections_per_source = 32;
  int64_t tcp_max_output_bytes_per_connection = 2 * (65535 + 2);
  int64_t tcp_max_output_bytes_total = 8 << 20;
  // Waiting queries.
  int64_t max_waiting_queries = 10'000;
  // Per-client rate limit and RRL (common/server/rate_limits.h).
  server::RateLimitFlags rate_limits;
  // Whose client-address EDNS option to believe, and its code (server/admission.h).
  std::string client_address_from = std::string(server::kDefaultClientAddressPeers);
  int64_t client_address_option = dns::kDefaultClientAddressOption;
  // kube-dns's, accepted for its Deployments (docs/operators.md, "kube-dns flags").
  std::string config_map;  // deprecated: mapped to --config-dir
  std::string config_map_namespace = "kube-system";
  std::string federations;  // refused when set
  // Query logging (common/server/query_log.h).
  bool log_queries = false;
  bool log_queries_extra = false;  // also the query ID, transport and reply size
  int64_t log_queries_rate = 100;
  int64_t log_queries_sample = 1;
  // --autopath; --autopath-search: nullopt when not given (resolv.conf's search list), a
  // comma-separated list of domains otherwise (empty: none).
  bool autopath = false;
  std::optional<std::string> autopath_search;
  bool check_flags = false;
};

// Where the kube-dns addon manifest mounts the kube-dns ConfigMap; --config-map maps here.
inline constexpr const char* kKubeDnsConfigDir = "/kube-dns-config";

struct Options {
  KubednsServer::Options server;
  uint64_t initial_sync_timeout_ms = 60'000;  // log loudly when not synced by then
  uint64_t lameduck_ms = 0;                   // answer this long after SIGTERM
  // What main logs as warnings once logging is set up (a deprecated flag mapped).
  std::vector<std::string> warnings;
};

// Checks the flags and builds the options; false with a one-line *error naming the first
// bad flag. `env` gives $PROMETHEUS_PORT and, in-cluster, the API server's address.
// `--log-queries=extra` (frontend-cache's and dnsmasq's spelling) for kubedns's gflags, where
// --log-queries is a bool: the same as `--log-queries --log-queries-extra`. Every other
// argument is left as it is.
std::vector<std::string> ExpandLogQueriesExtra(std::vector<std::string> args);

// Why --federations is refused: kubedns does not serve federation v1's names.
inline constexpr std::string_view kFederationsRetired =
    "Kubernetes federation v1 is retired and kubedns does not answer its "
    "<service>.<namespace>.<federation>.svc names; remove the flag (and the ConfigMap's "
    "federations key); for other clusters' names use stubDomains or multicluster "
    "Services (clusterset.local)";

// What --flag-table adds for kubedns (common/app/flag_table.h): --log-queries may carry a
// value, --federations is refused.
std::string FlagTableLines();

[[nodiscard]] bool BuildOptions(const FlagValues& flags, const k8s::EnvLookup& env,
                                Options* options, std::string* error);

}  // namespace kdns::kubedns

// kubedns: authoritative DNS server for the cluster domain, fed by Kubernetes objects.
// Flags and wiring only (options.h checks the flags); the program's behaviour lives in
// KubednsServer and the classes it wires (see README.md, "life of a query").
#include <curl/curl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <signal.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/app/program.h"
#include "common/base/version.h"
#include "kubedns/options.h"

// kube-dns's flags, same names and meanings.
DEFINE_string(domain, "cluster.local.", "Cluster domain served (kube-dns --domain).");
DEFINE_int32(dns_port, 10053, "Port to serve DNS on, UDP and TCP.");
DEFINE_string(dns_bind_address, "0.0.0.0", "Address to serve DNS on.");
DEFINE_int32(healthz_port, 8081, "Port for /readiness and /healthz.");
DEFINE_string(config_dir, "",
              "Directory of the mounted kube-dns ConfigMap: stubDomains and "
              "upstreamNameservers route the names kubedns forwards. An invalid version is "
              "logged and ignored (the previous one stays).");
DEFINE_string(config_period, "10s",
              "How often to re-read --config-dir and resolv.conf (Go duration).");
DEFINE_string(initial_sync_timeout, "60s",
              "Log loudly when the first full sync has not finished after this long; "
              "serving and retrying go on.");
DEFINE_string(nameservers, "",
              "Upstream servers for names outside the cluster domain, comma-separated "
              "ip, ip:port or [ipv6]:port, each optionally after tcp:// (asked over TCP "
              "only) or tls:// (DNS over TLS, port 853 unless given, @NAME after it for the "
              "certificate's name); the ConfigMap's upstreamNameservers take "
              "precedence; without either, the nameservers of --resolv-conf.");
DEFINE_string(route_options, "",
              "How each route's upstreams are asked (CoreDNS forward's force_tcp, prefer_udp, "
              "policy, max_fails, health_check): entries separated by spaces, each "
              "/domain/OPTIONS for a stub domain or OPTIONS for the default upstreams, "
              "e.g. \"/acme.local/force_tcp,policy=sequential max_fails=3,health_check=1s\"; "
              "the ConfigMap's kdns.routeOptions add to it.");
DEFINE_string(notify, "",
              "Caches in front of kubedns to tell when its records change (DNS NOTIFY, "
              "RFC 1996, for each zone served, at most one per zone every 100 ms), "
              "comma-separated ip, ip:port or [ipv6]:port: frontend-cache drops its cached "
              "negative answers for the zones then. Empty: none.");
DEFINE_string(kubecfg_file, "",
              "kubeconfig file for the Kubernetes API; without it and without "
              "--kube-master-url, the in-cluster service account is used.");
DEFINE_string(kube_master_url, "",
              "URL of the Kubernetes API server (e.g. http://127.0.0.1:8080); with "
              "--kubecfg-file it overrides the kubeconfig's server.");
DEFINE_string(endpoints_source, "endpointslices",
              "endpointslices (discovery.k8s.io/v1, falling back to v1 Endpoints when the "
              "cluster does not serve slices) or endpoints (v1 Endpoints only).");
DEFINE_string(api_backoff_max, "30s", "Longest wait between retries of the Kubernetes API.");
DEFINE_string(api_stall_timeout, "90s",
              "A watch that sends nothing (not even a bookmark) this long is restarted.");
DEFINE_double(api_qps, 5,
              "Client-side limit on Kubernetes API requests per second, shared by every "
              "list and watch (client-go's default; CoreDNS's apiserver_qps); 0: no limit.");
DEFINE_int64(api_burst, 10, "Kubernetes API requests allowed at once above --api-qps.");
DEFINE_bool(api_watch_list, false,
            "List by streaming watch-list (sendInitialEvents=true) where the API server "
            "serves it, falling back to LISTs where it does not (client-go's default: off).");
DEFINE_string(api_relist_jitter, "5s",
              "A re-LIST after 410 Gone waits a random time up to this, so that replicas told "
              "at once (an API-server restart) do not all list in the same second.");
// Ours.
DEFINE_string(objects_file, "",
              "Serve the objects of this `kubectl get services,endpointslices -A -o json` "
              "List, reloading it when it changes.");
DEFINE_string(multicluster_zone, "",
              "Serve Multi-Cluster Services (KEP-1645) ServiceImports of multicluster.x-k8s.io "
              "and their EndpointSlices under this zone, usually clusterset.local.; empty: off.");
DEFINE_string(kubeslice_zone, "",
              "Serve kubeslice ServiceImports (networking.kubeslice.io, or mesh.avesha.io) "
              "under this zone, usually slice.local.; empty: off.");
DEFINE_bool(zonal, false,
            "Answer <zone>.pin._zone.<svc>.<ns>.svc.<domain> and <zone>.prefer._zone... of "
            "headless services with their endpoints in that topology zone (CoreDNS's zonal).");
DEFINE_string(external_zone, "",
              "Serve <service>.<namespace>.<zone> for the external IPs and load balancer "
              "addresses of Services under these comma-separated zones (CoreDNS k8s_external); "
              "empty: off.");
DEFINE_int64(external_ttl, 5, "TTL of the --external-zone records and its negative answers.");
DEFINE_string(external_ns_service, "kube-system/kube-dns",
              "NAMESPACE/NAME of the Service whose external IPs ns1.dns.<external zone> "
              "answers (the NS of every --external-zone); empty: no address.");
DEFINE_string(namespaces, "",
              "Serve only the objects of these comma-separated namespaces (CoreDNS kubernetes "
              "namespaces); names in others are NXDOMAIN. Empty: all.");
DEFINE_string(labels, "",
              "Serve only the Services this label selector matches (CoreDNS kubernetes labels), "
              "e.g. \"app in (web,api),!internal\". Empty: all.");
DEFINE_bool(endpoint_pod_names, false,
            "Name endpoints without a hostname by their pod's name instead of their dashed IP "
            "(CoreDNS kubernetes endpoint_pod_names).");
// Bounds on one multicluster ServiceImport (docs/operators.md, "Limits").
DEFINE_int64(import_max_aliases, 100,
             "spec.aliases of one kubeslice ServiceImport; an import with more is not served.");
DEFINE_int64(import_max_endpoints, 5000,
             "status.endpoints of one kubeslice ServiceImport, or addresses in the EndpointSlices "
             "of one MCS ServiceImport; an import with more is not served.");
DEFINE_int64(import_max_bytes, 512 * 1024,
             "Characters of all the names one kubeslice ServiceImport carries (dnsName, aliases, "
             "endpoint dnsNames); an import with more is not served.");
DEFINE_int32(ttl, 30, "TTL of the records served, in seconds.");
DEFINE_int32(
    dns_threads, 0,
    "DNS serving threads; 0: one per CPU of the container's CPU limit, else one per core, at "
    "most 8.");
DEFINE_string(receiver_threads, "auto",
              "auto|on|off. on: a receiver thread per UDP socket sleeps in recvmmsg and answers "
              "the queries the records answer (no epoll_wait per batch); off: UDP is received "
              "on the DNS threads' loops; auto: on.");
DEFINE_string(pod_records, "insecure",
              "a-b-c-d.ns.pod.<domain> records: insecure (any IP), verified (only the IP "
              "of a live pod in that namespace; watches Pods), disabled.");
DEFINE_int32(prometheus_port, -1, "Port for /metrics; default: $PROMETHEUS_PORT, else 10055.");
DEFINE_int32(metrics_port, -1,
             "Deprecated: the old name of --prometheus-port (the same port, with a warning).");
DEFINE_string(http_bind_address, "0.0.0.0", "Address for the healthz and metrics ports.");
DEFINE_string(debug_address, "",
              "IP:port to serve the debug data on: /cache (the whole record tree, as JSON) and "
              "/debug/top-clients (the heaviest clients); empty: not served (404 on every "
              "port). Bind it to 127.0.0.1 and reach it with kubectl port-forward: every pod "
              "can reach the pod's other addresses.");
DEFINE_string(cache_dump_address, "",
              "Deprecated: the old name of --debug-address (the same address, with a warning).");
DEFINE_string(lameduck, "0s",
              "On SIGTERM, fail readiness and keep answering this long before exiting.");
DEFINE_string(resolv_conf, "/etc/resolv.conf",
              "Where the default upstreams come from when neither upstreamNameservers nor "
              "--nameservers gives any (re-read every --config-period).");
// Forwarding budgets (docs/operators.md, "Limits").
DEFINE_int32(forward_max, 4096,
             "Distinct upstream queries in flight in the whole process (all DNS threads), as "
             "dnsmasq's --dns-forward-max: the ceiling over every route's and upstream's "
             "budget. Beyond any budget, forwarded queries are answered at once (stale, else "
             "SERVFAIL).");
DEFINE_int32(forward_max_per_route, 0,
             "Distinct upstream queries in flight for one route (a stub domain, the default "
             "upstreams); 0: a quarter of --forward-max.");
DEFINE_int32(forward_max_per_upstream, 0,
             "Distinct upstream queries in flight to one upstream server; 0: a quarter of "
             "--forward-max.");
DEFINE_string(metrics_compat, "none",
              "coredns: /metrics also carries CoreDNS's coredns_* families, derived from ours; "
              "none: only ours.");
DEFINE_string(tls_ca_file, "",
              "CA bundle (PEM) that tls:// upstreams' certificates are verified against; empty: "
              "the system's CA bundle.");
DEFINE_string(upstream_0x20, "auto",
              "Random letter case in forwarded names (0x20), checked in the reply: auto (an "
              "upstream that does not echo the case gets the plain name for 10 minutes), on "
              "(never falls back), off.");
DEFINE_string(loadbalance, "off",
              "round_robin: each answer from the records rotates its A/AAAA RRsets one place "
              "(CoreDNS's loadbalance); off: the records' own order, as kube-dns's kubedns.");
DEFINE_int32(forward_client_reserve,
             static_cast<int32_t>(kdns::upstream::ForwardBudgets::kDefaultClientReservePercent),
             "Percent (0-50) of each route's and upstream's budget kept for the clients holding "
             "less than the average of it, so that one client's queries to a slow domain "
             "cannot take a whole route; 0: off.");
// DNS over TCP limits (docs/operators.md, "Limits").
DEFINE_string(tcp_idle_timeout, "10s",
              "A DNS/TCP connection with no query outstanding is closed this long after its "
              "last whole message (bytes of a message do not count); 0: never.");
DEFINE_string(tcp_frame_timeout, "2s",
              "A DNS/TCP message must be whole this long after its first byte arrived, however "
              "it trickles in (Knot's tcp-io-timeout); 0: no limit.");
DEFINE_string(tcp_query_timeout, "5s",
              "A DNS/TCP connection with queries outstanding and no answer sent for this long "
              "has them answered SERVFAIL (closed if that is not possible); 0: no limit.");
DEFINE_int64(tcp_max_connections, 256,
             "DNS/TCP connections open in the whole process; at the cap one of the client "
             "holding the most is closed for a new one, idle ones first (refused if none may "
             "be).");
DEFINE_int64(tcp_max_connections_per_source, 32,
             "DNS/TCP connections open from one client address; at the cap that client's "
             "oldest idle one is closed for its new one.");
DEFINE_int64(tcp_max_output_bytes_per_connection, 2 * (65535 + 2),
             "Replies waiting for one DNS/TCP client that does not read, in bytes, before the "
             "connection is closed (at least 65537).");
DEFINE_int64(tcp_max_output_bytes_total, 8 << 20,
             "Replies waiting for DNS/TCP clients that do not read, in bytes over all "
             "connections; a reply that does not fit closes its connection.");
// Waiting queries.
DEFINE_int64(max_waiting_queries, 10'000,
             "Queries waiting for an upstream (forwarded, or an ExternalName chase) in the whole "
             "process; beyond it, such a query is answered SERVFAIL at once.");
// Per-client rate limit and RRL (docs/operators.md, "Rate limiting and shedding").
DEFINE_int64(client_rate_limit, 0,
             "Responses per second to one client (address prefix) over UDP; over it queries are "
             "dropped, every --client-rate-slip-th answered with TC. 0: off.");
DEFINE_int64(client_rate_burst, 0, "Responses at once to one client; 0: --client-rate-limit.");
DEFINE_int64(client_rate_prefix_v4, 32, "The IPv4 prefix length that is one client.");
DEFINE_int64(client_rate_prefix_v6, 64, "The IPv6 prefix length that is one client.");
DEFINE_int64(client_rate_slip, 2,
             "Every Nth rate-limited query (and RRL-limited response) is answered with TC so a "
             "real resolver retries over TCP; 0: never.");
DEFINE_string(client_rate_exempt, "",
              "Comma-separated address prefixes never rate limited or shed (node-local caches, "
              "probes), e.g. 169.254.20.10/32,10.0.0.0/8.");
DEFINE_string(client_address_from, "127.0.0.0/8,::1/128",
              "Comma-separated address prefixes whose client-address EDNS option is believed: "
              "a query from them is limited, logged and counted as the client the option "
              "names (frontend-cache, on loopback, names the pod). From anyone else the option "
              "is ignored and counted. Empty: believed from no one.");
DEFINE_int32(client_address_option, 65432,
             "The client-address EDNS option's code, a private-use one (65001-65534); the "
             "same as frontend-cache's --client-address-option.");
DEFINE_int64(rrl_responses_per_second, 0,
             "Response rate limiting of identical answers (BIND's RRL): per /24 (/56) and "
             "second, for each answer, NODATA name, NXDOMAIN zone and error kind. 0: off.");
// kube-dns's, for its Deployments (docs/operators.md, "kube-dns flags").
DEFINE_string(config_map, "",
              "Deprecated (as in kube-dns): read the kube-dns ConfigMap mounted at --config-dir "
              "instead; when set without --config-dir, --config-dir=/kube-dns-config.");
DEFINE_string(config_map_namespace, "kube-system", "Namespace of --config-map (deprecated).");
DEFINE_string(federations, "",
              "Refused when set: Kubernetes federation v1 is retired (see docs/operators.md).");
// Query logging.
DEFINE_bool(log_queries, false,
            "Log one line per answer: client, name, type, rcode, source (local, upstream), "
            "duration.");
DEFINE_bool(log_queries_extra, false,
            "With --log-queries: also the query ID, transport and reply size, as frontend-cache's "
            "--log-queries=extra (which kubedns accepts too).");
DEFINE_int32(log_queries_rate, 100,
             "With --log-queries, at most this many lines a second (0: no limit); the rest are "
             "counted and summed in one line.");
DEFINE_int32(log_queries_sample, 1, "With --log-queries, log one query in this many.");
// Autopath (docs/operators.md, "Autopath").
DEFINE_bool(autopath, false,
            "Complete a pod's search-path walk on the server: a query N.<ns>.svc.<domain> "
            "without records is answered with a CNAME to the first of N.svc.<domain>, "
            "N.<domain>, N.<each --autopath-search domain>, N. that exists, plus its answer.");
DEFINE_string(autopath_search, "",
              "With --autopath: the node's search domains, comma-separated, walked after the "
              "cluster's; not given: the search list of --resolv-conf (with dnsPolicy: "
              "Default, the node's), read at start-up; empty: none.");
DEFINE_bool(check_flags, false, "Validate the flags and exit (for manifest checks).");

namespace {

kdns::kubedns::FlagValues FlagValuesFromGflags() {
  kdns::kubedns::FlagValues flags;
  flags.domain = FLAGS_domain;
  flags.dns_port = FLAGS_dns_port;
  flags.dns_bind_address = FLAGS_dns_bind_address;
  flags.healthz_port = FLAGS_healthz_port;
  flags.config_dir = FLAGS_config_dir;
  flags.config_period = FLAGS_config_period;
  flags.initial_sync_timeout = FLAGS_initial_sync_timeout;
  flags.nameservers = FLAGS_nameservers;
  flags.route_options = FLAGS_route_options;
  flags.notify = FLAGS_notify;
  flags.kubecfg_file = FLAGS_kubecfg_file;
  flags.kube_master_url = FLAGS_kube_master_url;
  flags.endpoints_source = FLAGS_endpoints_source;
  flags.api_backoff_max = FLAGS_api_backoff_max;
  flags.api_stall_timeout = FLAGS_api_stall_timeout;
  flags.api_qps = FLAGS_api_qps;
  flags.api_burst = FLAGS_api_burst;
  flags.api_relist_jitter = FLAGS_api_relist_jitter;
  flags.api_watch_list = FLAGS_api_watch_list;
  flags.objects_file = FLAGS_objects_file;
  flags.multicluster_zone = FLAGS_multicluster_zone;
  flags.kubeslice_zone = FLAGS_kubeslice_zone;
  flags.zonal = FLAGS_zonal;
  flags.external_zone = FLAGS_external_zone;
  flags.external_ttl = FLAGS_external_ttl;
  flags.external_ns_service = FLAGS_external_ns_service;
  flags.namespaces = FLAGS_namespaces;
  flags.labels = FLAGS_labels;
  flags.endpoint_pod_names = FLAGS_endpoint_pod_names;
  flags.import_max_aliases = FLAGS_import_max_aliases;
  flags.import_max_endpoints = FLAGS_import_max_endpoints;
  flags.import_max_bytes = FLAGS_import_max_bytes;
  flags.ttl = FLAGS_ttl;
  flags.dns_threads = FLAGS_dns_threads;
  flags.receiver_threads = FLAGS_receiver_threads;
  flags.pod_records = FLAGS_pod_records;
  flags.prometheus_port = FLAGS_prometheus_port;
  flags.metrics_port = FLAGS_metrics_port;
  flags.http_bind_address = FLAGS_http_bind_address;
  flags.debug_address = FLAGS_debug_address;
  flags.cache_dump_address = FLAGS_cache_dump_address;
  flags.lameduck = FLAGS_lameduck;
  flags.resolv_conf = FLAGS_resolv_conf;
  flags.forward_max = FLAGS_forward_max;
  flags.forward_max_per_route = FLAGS_forward_max_per_route;
  flags.forward_max_per_upstream = FLAGS_forward_max_per_upstream;
  flags.upstream_0x20 = FLAGS_upstream_0x20;
  flags.loadbalance = FLAGS_loadbalance;
  flags.tls_ca_file = FLAGS_tls_ca_file;
  flags.metrics_compat = FLAGS_metrics_compat;
  flags.forward_client_reserve = FLAGS_forward_client_reserve;
  flags.tcp_idle_timeout = FLAGS_tcp_idle_timeout;
  flags.tcp_frame_timeout = FLAGS_tcp_frame_timeout;
  flags.tcp_query_timeout = FLAGS_tcp_query_timeout;
  flags.tcp_max_connections = FLAGS_tcp_max_connections;
  flags.tcp_max_connections_per_source = FLAGS_tcp_max_connections_per_source;
  flags.tcp_max_output_bytes_per_connection = FLAGS_tcp_max_output_bytes_per_connection;
  flags.tcp_max_output_bytes_total = FLAGS_tcp_max_output_bytes_total;
  flags.max_waiting_queries = FLAGS_max_waiting_queries;
  flags.rate_limits.client_rate_limit = FLAGS_client_rate_limit;
  flags.rate_limits.client_rate_burst = FLAGS_client_rate_burst;
  flags.rate_limits.client_rate_prefix_v4 = FLAGS_client_rate_prefix_v4;
  flags.rate_limits.client_rate_prefix_v6 = FLAGS_client_rate_prefix_v6;
  flags.rate_limits.client_rate_slip = FLAGS_client_rate_slip;
  flags.rate_limits.client_rate_exempt = FLAGS_client_rate_exempt;
  flags.rate_limits.rrl_responses_per_second = FLAGS_rrl_responses_per_second;
  flags.client_address_from = FLAGS_client_address_from;
  flags.client_address_option = FLAGS_client_address_option;
  flags.config_map = FLAGS_config_map;
  flags.config_map_namespace = FLAGS_config_map_namespace;
  flags.federations = FLAGS_federations;
  flags.log_queries = FLAGS_log_queries;
  flags.log_queries_extra = FLAGS_log_queries_extra;
  flags.log_queries_rate = FLAGS_log_queries_rate;
  flags.log_queries_sample = FLAGS_log_queries_sample;
  flags.autopath = FLAGS_autopath;
  if (!gflags::GetCommandLineFlagInfoOrDie("autopath_search").is_default) {
    flags.autopath_search = FLAGS_autopath_search;
  }
  flags.check_flags = FLAGS_check_flags;
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  kdns::app::SetProgram(
      {"kubedns", "Authoritative DNS for the Kubernetes cluster domain.\nUsage: kubedns [flags]"});
  kdns::app::SetFlagTableLines(kdns::kubedns::FlagTableLines());
  kdns::app::ParseFlags(
      kdns::kubedns::ExpandLogQueriesExtra(std::vector<std::string>(argv, argv + argc)));
  kdns::kubedns::Options options;
  std::string error;
  if (!kdns::kubedns::BuildOptions(FlagValuesFromGflags(), kdns::k8s::ProcessEnv(), &options,
                                   &error)) {
    kdns::app::Fail(error);
  }
  for (const std::string& warning : options.warnings) std::cerr << "kubedns: " << warning << "\n";
  kdns::app::ExitIfCheckingFlags(FLAGS_check_flags);
  kdns::app::InitProcess(argv[0]);
  for (const std::string& warning : options.warnings) LOG(WARNING) << warning;
  curl_global_init(CURL_GLOBAL_DEFAULT);  // not thread-safe: before the API thread starts
  // Signals are taken synchronously by this thread; every other thread blocks them.
  const sigset_t signals = kdns::app::BlockSignals({SIGTERM, SIGINT});

  kdns::kubedns::KubednsServer server(options.server);
  if (!server.Start(&error)) kdns::app::Fail(error);
  LOG(INFO) << "kubedns " << kdns::kVersion << " serving " << options.server.answer.zone.ToText()
            << " on " << server.dns_address().ToString() << " (UDP, TCP), readiness on "
            << server.healthz_address().ToString() << ", metrics on "
            << server.metrics_address().ToString()
            << (options.server.debug_address
                    ? ", debug data on " + server.debug_address().ToString()
                    : std::string());

  const uint64_t sync_timeout_ms = options.initial_sync_timeout_ms;
  timespec wait{static_cast<time_t>(sync_timeout_ms / 1000),
                static_cast<long>(sync_timeout_ms % 1000) * 1000000};
  int signal_number = sigtimedwait(&signals, nullptr, &wait);
  if (signal_number < 0 && !server.ready() && !options.server.objects_file.empty()) {
    LOG(ERROR) << "initial sync not done after " << FLAGS_initial_sync_timeout
               << ": cluster names are answered SERVFAIL until it is; still trying";
  }
  while (signal_number < 0) signal_number = sigwaitinfo(&signals, nullptr);
  LOG(INFO) << "signal " << signal_number << ": failing readiness, lameduck for " << FLAGS_lameduck;
  server.StartLameduck();
  if (options.lameduck_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options.lameduck_ms));
  }
  server.Stop();
  LOG(INFO) << "kubedns stopped";
  return 0;
}

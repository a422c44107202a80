#include "kubedns/options.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/base/duration.h"
#include "common/base/port.h"
#include "common/base/trim.h"
#include "common/dns/loadbalance.h"
#include "common/dns/reverse.h"
#include "common/k8s/label_selector.h"
#include "common/metrics/coredns_compat.h"
#include "common/server/debug_http.h"
#include "common/server/loop_server.h"
#include "common/upstream/dns0x20.h"
#include "common/upstream/forward_budgets.h"
#include "kubedns/serving/upstream_routes.h"

namespace kdns::kubedns {
namespace {

bool Duration(const char* name, const std::string& value, uint64_t* ms, std::string* error) {
  std::optional<uint64_t> parsed = ParseDurationMs(value);
  if (!parsed) {
    *error = std::string("--") + name + ": not a duration: \"" + value + "\"";
    return false;
  }
  *ms = *parsed;
  return true;
}

bool Port(const char* name, int64_t value, uint16_t* port, std::string* error) {
  if (value < 0 || value > 65535) {
    *error = std::string("--") + name + ": not a port";
    return false;
  }
  *port = static_cast<uint16_t>(value);
  return true;
}

// `address_flag`'s host with the port of `port_flag`.
bool Address(const char* address_flag, const std::string& host, const char* port_flag,
             int64_t port_value, loop::SocketAddress* address, std::string* error) {
  uint16_t port = 0;
  if (!Port(port_flag, port_value, &port, error)) return false;
  std::optional<loop::SocketAddress> parsed = loop::SocketAddress::FromHostPort(host, port);
  if (!parsed) {
    *error = std::string("--") + address_flag + ": not an IP address: \"" + host + "\"";
    return false;
  }
  *address = *parsed;
  return true;
}

// An optional zone flag (--multicluster-zone, --kubeslice-zone): empty is off; otherwise a
// domain name (a trailing dot added), kept in lower case, that neither contains nor lies in
// the cluster zone or the other zone already set in `taken`.
bool ZoneFlag(const char* flag, const std::string& value, const std::vector<dns::Name>& taken,
              std::optional<dns::Name>* out, std::string* error) {
  if (value.empty()) return true;
  std::string text = value.back() == '.' ? value : value + ".";
  std::optional<dns::Name> zone = dns::Name::FromText(text);
  if (!zone || zone->IsRoot()) {
    *error = std::string("--") + flag + ": not a domain name: \"" + value + "\"";
    return false;
  }
  dns::Name lower = zone->Lowercased();
  for (const auto& other : taken) {
    if (lower.IsSubdomainOf(other) || other.IsSubdomainOf(lower)) {
      *error = std::string("--") + flag + ": " + lower.ToText() + " overlaps " + other.ToText();
      return false;
    }
  }
  *out = lower;
  return true;
}

// --import-max-*: each in 1..its ceiling (a bound of 0 would refuse every import).
bool ImportLimitOptions(const FlagValues& flags, ImportLimits* limits, std::string* error) {
  for (const auto& [name, value, max] :
       {std::tuple{"import-max-aliases", flags.import_max_aliases, int64_t{1'000'000}},
        std::tuple{"import-max-endpoints", flags.import_max_endpoints, int64_t{1'000'000}},
        std::tuple{"import-max-bytes", flags.import_max_bytes, int64_t{1} << 30}}) {
    if (value < 1 || value > max) {
      *error = std::string("--") + name + ": must be in 1.." + std::to_string(max);
      return false;
    }
  }
  limits->max_aliases = static_cast<uint32_t>(flags.import_max_aliases);
  limits->max_endpoints = static_cast<uint32_t>(flags.import_max_endpoints);
  limits->max_name_bytes = static_cast<uint64_t>(flags.import_max_bytes);
  return true;
}

// --external-zone (a comma-separated list, as CoreDNS's k8s_external takes several zones)
// and --external-ttl. The zones must not overlap the others kubedns serves.
bool ExternalOptions(const FlagValues& flags, std::vector<dns::Name> taken,
                     KubednsServer::Options* options, std::string* error) {
  if (flags.external_ttl < 0 || flags.external_ttl > std::numeric_limits<int32_t>::max()) {
    *error = "--external-ttl: must be in 0..2147483647";
    return false;
  }
  options->answer.external.ttl_s = static_cast<uint32_t>(flags.external_ttl);
  std::string_view rest = flags.external_zone;
  while (!flags.external_zone.empty()) {
    const size_t comma = rest.find(',');
    std::optional<dns::Name> zone;
    if (!ZoneFlag("external-zone", std::string(rest.substr(0, comma)), taken, &zone, error)) {
      return false;
    }
    if (!zone) {
      *error = "--external-zone: an empty zone in \"" + flags.external_zone + "\"";
      return false;
    }
    taken.push_back(*zone);
    options->answer.external.zones.push_back(*zone);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  // A reverse zone's PTR records point into the first forward one.
  const auto& zones = options->answer.external.zones;
  if (!zones.empty() && std::all_of(zones.begin(), zones.end(), dns::IsReverseName)) {
    *error = "--external-zone: a reverse zone needs a forward zone for its PTR targets";
    return false;
  }
  const std::string& ns_service = flags.external_ns_service;
  const size_t slash = ns_service.find('/');
  if (!ns_service.empty() &&
      (slash == std::string::npos || slash == 0 || slash + 1 == ns_service.size() ||
       ns_service.find('/', slash + 1) != std::string::npos)) {
    *error = "--external-ns-service: \"" + ns_service + "\" is not NAMESPACE/NAME";
    return false;
  }
  options->answer.external.ns_service_namespace =
      ns_service.empty() ? "" : ns_service.substr(0, slash);
  options->answer.external.ns_service_name = ns_service.empty() ? "" : ns_service.substr(slash + 1);
  return true;
}

// --namespaces, --labels, --endpoint-pod-names (records/object_filter.h).
bool FilterOptions(const FlagValues& flags, KubednsServer::Options* options, std::string* error) {
  ObjectFilterOptions& filter = options->filter;
  filter.endpoint_pod_names = flags.endpoint_pod_names;
  std::string_view rest = flags.namespaces;
  while (!flags.namespaces.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view ns = Trim(rest.substr(0, comma));
    if (ns.empty()) {
      *error = "--namespaces: an empty namespace in \"" + flags.namespaces + "\"";
      return false;
    }
    filter.namespaces.emplace_back(ns);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  auto selector = k8s::LabelSelector::Parse(flags.labels);
  if (!selector) {
    *error = "--labels: " + selector.error();
    return false;
  }
  filter.labels = *selector;
  options->api.service_label_selector = filter.labels.text();
  return true;
}

bool AnswerOptions(const FlagValues& flags, KubednsServer::Options* options, std::string* error) {
  std::string domain = flags.domain;
  if (domain.empty() || domain.back() != '.') domain += '.';
  std::optional<dns::Name> zone = dns::Name::FromText(domain);
  if (!zone || zone->IsRoot()) {
    *error = "--domain: not a domain name: \"" + flags.domain + "\"";
    return false;
  }
  options->answer.zone = *zone;
  std::vector<dns::Name> taken{zone->Lowercased()};
  if (!ZoneFlag("multicluster-zone", flags.multicluster_zone, taken,
                &options->answer.multicluster_zone, error)) {
    return false;
  }
  if (options->answer.multicluster_zone) taken.push_back(*options->answer.multicluster_zone);
  if (!ZoneFlag("kubeslice-zone", flags.kubeslice_zone, taken, &options->answer.kubeslice_zone,
                error)) {
    return false;
  }
  if (options->answer.kubeslice_zone) taken.push_back(*options->answer.kubeslice_zone);
  if (!ExternalOptions(flags, taken, options, error)) return false;
  if (!FilterOptions(flags, options, error)) return false;
  if (!ImportLimitOptions(flags, &options->import_limits, error)) return false;
  options->api.watch_multicluster = options->answer.multicluster_zone.has_value();
  options->api.watch_kubeslice = options->answer.kubeslice_zone.has_value();
  if (flags.ttl < 0) {
    *error = "--ttl: must not be negative";
    return false;
  }
  options->answer.ttl_s = static_cast<uint32_t>(flags.ttl);
  options->answer.zonal = flags.zonal;
  options->answer.soa_serial_base = static_cast<uint32_t>(std::time(nullptr));
  if (flags.pod_records == "insecure") {
    options->answer.pod_records = PodRecords::kInsecure;
  } else if (flags.pod_records == "disabled") {
    options->answer.pod_records = PodRecords::kDisabled;
  } else if (flags.pod_records == "verified") {
    options->answer.pod_records = PodRecords::kVerified;
    options->api.watch_pods = true;
  } else {
    *error = "--pod-records: insecure, verified or disabled, not \"" + flags.pod_records + "\"";
    return false;
  }
  return true;
}

bool AutopathOptions(const FlagValues& flags, KubednsServer::Options* options, std::string* error) {
  options->autopath = flags.autopath;
  if (!flags.autopath_search) return true;
  if (!flags.autopath) {
    *error = "--autopath-search: only with --autopath";
    return false;
  }
  std::vector<dns::Name> search;
  std::string_view rest = *flags.autopath_search;
  while (!flags.autopath_search->empty()) {
    const size_t comma = rest.find(',');
    const std::string_view domain = rest.substr(0, comma);
    std::optional<dns::Name> name = dns::Name::FromText(domain);
    if (domain.empty() || !name || name->IsRoot()) {
      *error = "--autopath-search: not a domain name: \"" + std::string(domain) + "\"";
      return false;
    }
    search.push_back(*name);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  options->autopath_search = std::move(search);
  return true;
}

// --prometheus-port (the sidecar's kube-dns spelling, one for every program of the pod),
// and its deprecated old name --metrics-port: the same port, with a warning; both given
// must agree. -1 when neither is given; *flag: the one given.
bool PrometheusPort(const FlagValues& flags, int64_t* port, const char** flag,
                    std::vector<std::string>* warnings, std::string* error) {
  *port = flags.prometheus_port;
  *flag = "prometheus-port";
  if (flags.metrics_port < 0) return true;
  if (flags.prometheus_port >= 0 && flags.prometheus_port != flags.metrics_port) {
    *error = "--metrics-port=" + std::to_string(flags.metrics_port) +
             " is the old name of --prometheus-port=" + std::to_string(flags.prometheus_port) +
             ": give one of them";
    return false;
  }
  warnings->push_back("--metrics-port is deprecated: it is --prometheus-port");
  *port = flags.metrics_port;
  *flag = "metrics-port";
  return true;
}

bool ListenOptions(const FlagValues& flags, const k8s::EnvLookup& env,
                   KubednsServer::Options* options, std::vector<std::string>* warnings,
                   std::string* error) {
  if (!Address("dns-bind-address", flags.dns_bind_address, "dns-port", flags.dns_port,
               &options->dns_address, error)) {
    return false;
  }
  if (flags.dns_threads < 0) {
    *error = "--dns-threads: must not be negative";
    return false;
  }
  options->dns_threads = static_cast<size_t>(flags.dns_threads);
  if (flags.receiver_threads == "auto" || flags.receiver_threads == "on") {
    options->receiver_threads = true;
  } else if (flags.receiver_threads == "off") {
    options->receiver_threads = false;
  } else {
    *error = "--receiver-threads: \"" + flags.receiver_threads + "\" is not auto, on or off";
    return false;
  }
  if (!Address("http-bind-address", flags.http_bind_address, "healthz-port", flags.healthz_port,
               &options->healthz_address, error)) {
    return false;
  }
  int64_t metrics_port = -1;
  const char* metrics_flag = nullptr;
  if (!PrometheusPort(flags, &metrics_port, &metrics_flag, warnings, error)) return false;
  if (metrics_port < 0) {
    const std::optional<std::string> prometheus_port = env("PROMETHEUS_PORT");  // kube-dns's
    metrics_port = 10055;
    if (prometheus_port && !prometheus_port->empty()) {
      const std::optional<uint16_t> port = ParsePort(*prometheus_port);
      if (!port) {
        *error = "PROMETHEUS_PORT: \"" + *prometheus_port + "\" is not a port (1..65535)";
        return false;
      }
      metrics_port = *port;
    }
  }
  if (!Address("http-bind-address", flags.http_bind_address, metrics_flag, metrics_port,
               &options->metrics_address, error)) {
    return false;
  }
  return true;
}

// --debug-address, and its old name --cache-dump-address (which served /cache alone).
bool DebugAddress(const FlagValues& flags, KubednsServer::Options* options,
                  std::vector<std::string>* warnings, std::string* error) {
  std::string value = flags.debug_address;
  std::string_view flag = server::kDebugAddressFlag;
  if (!flags.cache_dump_address.empty()) {
    if (!value.empty() && value != flags.cache_dump_address) {
      *error = "--cache-dump-address=" + flags.cache_dump_address +
               " is the old name of --debug-address=" + value + ": give one of them";
      return false;
    }
    warnings->push_back(
        "--cache-dump-address is deprecated: it is --debug-address, which "
        "serves /debug/top-clients next to /cache on the same address");
    value = flags.cache_dump_address;
    flag = "cache-dump-address";
  }
  if (value.empty()) return true;
  if (!server::ParseDebugAddress(value, flag, &options->debug_address, error)) return false;
  for (const auto& [other_flag, other] :
       {std::pair{"--healthz-port", options->healthz_address},
        std::pair{"--prometheus-port", options->metrics_address}}) {
    *error = server::DebugAddressClash(*options->debug_address, other_flag, other);
    if (!error->empty()) return false;
  }
  const std::string warning = server::DebugAddressWarning(flag, *options->debug_address);
  if (!warning.empty()) warnings->push_back(warning);
  return true;
}

bool WaitingOptions(const FlagValues& flags, KubednsServer::Options* options, std::string* error) {
  if (flags.max_waiting_queries < 1 || flags.max_waiting_queries > 1'000'000) {
    *error = "--max-waiting-queries: must be in 1..1000000";
    return false;
  }
  options->max_waiting_queries = static_cast<size_t>(flags.max_waiting_queries);
  server::RateLimits unused;
  if (!server::MakeRateLimits(flags.rate_limits, nullptr, &unused, error)) return false;
  options->rate_limits = flags.rate_limits;
  if (!ParsePrefixList(flags.client_address_from, &options->client_address.trusted, error)) {
    *error = "--client-address-from: " + *error;
    return false;
  }
  return server::ParseClientAddressOption(flags.client_address_option,
                                          &options->client_address.option_code, error);
}

// kube-dns's --config-map (deprecated there in favour of a mounted --config-dir) and
// --federations (federation v1, retired).
bool KubeDnsCompatibility(const FlagValues& flags, KubednsServer::Options* server,
                          std::vector<std::string>* warnings, std::string* error) {
  if (!flags.federations.empty()) {
    *error = "--federations=" + flags.federations + ": " + std::string(kFederationsRetired);
    return false;
  }
  if (flags.config_map.empty()) return true;
  if (server->config_dir.empty()) {
    server->config_dir = kKubeDnsConfigDir;
    warnings->push_back("--config-map=" + flags.config_map +
                        " is deprecated (as in kube-dns): reading the ConfigMap mounted at "
                        "--config-dir=" +
                        kKubeDnsConfigDir + " instead; mount ConfigMap " +
                        flags.config_map_namespace + "/" + flags.config_map +
                        " there (optional: true) and pass --config-dir");
  } else {
    warnings->push_back("--config-map=" + flags.config_map + " is ignored: --config-dir=" +
                        server->config_dir + " is read (mount the ConfigMap there)");
  }
  return true;
}

bool QueryLogOptions(const FlagValues& flags, server::QueryLogOptions* log, std::string* error) {
  if (flags.log_queries_rate < 0 || flags.log_queries_rate > 1'000'000) {
    *error = "--log-queries-rate: must be in 0..1000000 lines a second";
    return false;
  }
  if (flags.log_queries_sample < 1 || flags.log_queries_sample > 1'000'000) {
    *error = "--log-queries-sample: must be in 1..1000000 (log one query in N)";
    return false;
  }
  using Detail = server::QueryLogOptions::Detail;
  log->detail = !flags.log_queries        ? Detail::kOff
                : flags.log_queries_extra ? Detail::kExtra
                                          : Detail::kBasic;
  log->max_lines_per_second = static_cast<uint32_t>(flags.log_queries_rate);
  log->sample_one_in = static_cast<uint32_t>(flags.log_queries_sample);
  return true;
}

bool ForwardOptions(const FlagValues& flags, KubednsServer::Options* options, std::string* error) {
  options->config_dir = flags.config_dir;
  if (!Duration("config-period", flags.config_period, &options->config_period_ms, error)) {
    return false;
  }
  if (options->config_period_ms == 0) {
    *error = "--config-period: must be positive";
    return false;
  }
  std::string nameservers_error;
  auto nameservers =
      ParseNameserversFlag(flags.nameservers, upstream::kKubeDnsSyntax, &nameservers_error);
  if (!nameservers) {
    *error = "--nameservers: " + nameservers_error;
    return false;
  }
  const loop::SocketAddress& dns = options->dns_address;
  for (const upstream::Upstream& upstream : *nameservers) {
    // Forwarding to ourselves would loop every outside name until it times out.
    const loop::SocketAddress& nameserver = upstream.address;
    const bool ours =
        nameserver.port() == dns.port() &&
        (nameserver == dns || (dns.IsWildcard() && (nameserver.HostString() == "127.0.0.1" ||
                                                    nameserver.HostString() == "::1")));
    if (ours) {
      *error = "--nameservers: " + nameserver.ToString() + " is this kubedns itself";
      return false;
    }
  }
  options->nameservers = std::move(*nameservers);
  if (!upstream::ParseRouteOptionsList(flags.route_options, &options->route_options, error)) {
    *error = "--route-options: " + *error;
    return false;
  }
  std::string notify_error;
  // NOTIFY goes over UDP (RFC 1996): no tcp:// here.
  upstream::AddressSyntax notify_syntax = upstream::kKubeDnsSyntax;
  notify_syntax.transport_scheme = false;
  auto notify = ParseNameserversFlag(flags.notify, notify_syntax, &notify_error);
  if (!notify) {
    *error = "--notify: " + notify_error;
    return false;
  }
  options->notify_targets.clear();
  for (const upstream::Upstream& target : *notify)
    options->notify_targets.push_back(target.address);
  options->resolv_conf = flags.resolv_conf;
  if (flags.forward_max < 1) {
    *error = "--forward-max: must be at least 1";
    return false;
  }
  for (const auto& [name, value] :
       {std::pair{"--forward-max-per-route", flags.forward_max_per_route},
        std::pair{"--forward-max-per-upstream", flags.forward_max_per_upstream}}) {
    if (value < 0 || value > flags.forward_max) {
      *error = std::string(name) + ": must be between 0 (a quarter of --forward-max) and " +
               "--forward-max (" + std::to_string(flags.forward_max) + ")";
      return false;
    }
  }
  constexpr auto kMaxReserve =
      static_cast<int64_t>(upstream::ForwardBudgets::kMaxClientReservePercent);
  if (flags.forward_client_reserve < 0 || flags.forward_client_reserve > kMaxReserve) {
    *error = "--forward-client-reserve: must be a percent between 0 (off) and " +
             std::to_string(kMaxReserve);
    return false;
  }
  upstream::ForwardBudgets::Limits budgets;
  budgets.max_in_flight = static_cast<size_t>(flags.forward_max);
  budgets.max_per_route = static_cast<size_t>(flags.forward_max_per_route);
  budgets.max_per_upstream = static_cast<size_t>(flags.forward_max_per_upstream);
  budgets.client_reserve_percent = static_cast<size_t>(flags.forward_client_reserve);
  options->forwarder.budgets = std::make_shared<upstream::ForwardBudgets>(budgets);
  if (!upstream::ParseDns0x20(flags.upstream_0x20, &options->forwarder.dns0x20.mode)) {
    *error = "--upstream-0x20: \"" + flags.upstream_0x20 + "\" is not auto, on or off";
    return false;
  }
  options->forwarder.tls_context = loop::TlsContext::Create(flags.tls_ca_file, error);
  if (options->forwarder.tls_context == nullptr) {
    *error = "--tls-ca-file: " + *error;
    return false;
  }
  return true;
}

// A count flag of the TCP limits, at least `min`.
bool TcpCount(const char* name, int64_t value, uint64_t min, size_t* out, std::string* error) {
  if (value < 0 || static_cast<uint64_t>(value) < min) {
    *error = std::string("--") + name + ": must be at least " + std::to_string(min);
    return false;
  }
  *out = static_cast<size_t>(value);
  return true;
}

bool TcpOptions(const FlagValues& flags, server::TcpOptions* tcp, std::string* error) {
  if (!Duration("tcp-idle-timeout", flags.tcp_idle_timeout, &tcp->idle_timeout_ms, error) ||
      !Duration("tcp-frame-timeout", flags.tcp_frame_timeout, &tcp->frame_timeout_ms, error) ||
      !Duration("tcp-query-timeout", flags.tcp_query_timeout, &tcp->query_timeout_ms, error) ||
      !TcpCount("tcp-max-connections", flags.tcp_max_connections, 1, &tcp->max_connections,
                error) ||
      !TcpCount("tcp-max-connections-per-source", flags.tcp_max_connections_per_source, 1,
                &tcp->max_connections_per_source, error) ||
      !TcpCount("tcp-max-output-bytes-per-connection", flags.tcp_max_output_bytes_per_connection,
                server::kMinTcpOutputBytes, &tcp->max_pending_output_bytes, error) ||
      !TcpCount("tcp-max-output-bytes-total", flags.tcp_max_output_bytes_total,
                server::kMinTcpOutputBytes, &tcp->max_pending_output_bytes_total, error)) {
    return false;
  }
  return true;
}

bool ApiOptions(const FlagValues& flags, const k8s::EnvLookup& env, KubednsServer::Options* options,
                std::string* error) {
  k8s::Result<k8s::ApiConfig> config =
      !flags.kubecfg_file.empty()
          ? k8s::FromKubeconfig(flags.kubecfg_file)
          : (!flags.kube_master_url.empty() ? k8s::FromMasterUrl(flags.kube_master_url)
                                            : k8s::FromInCluster(env));
  if (!config.ok()) {
    *error = "Kubernetes API: " + config.error();
    return false;
  }
  if (!flags.kubecfg_file.empty() && !flags.kube_master_url.empty()) {
    config.value().server = flags.kube_master_url;  // as kube-dns: the URL overrides
    while (!config.value().server.empty() && config.value().server.back() == '/') {
      config.value().server.pop_back();
    }
  }
  options->api_config = std::move(config.value());
  if (flags.endpoints_source == "endpoints") {
    options->api.endpoints_source = ApiSource::EndpointsSource::kEndpoints;
  } else if (flags.endpoints_source != "endpointslices") {
    *error =
        "--endpoints-source: endpointslices or endpoints, not \"" + flags.endpoints_source + "\"";
    return false;
  }
  // 0 turns the limit off; NaN fails both comparisons.
  if (!(flags.api_qps >= 0 && flags.api_qps <= 1e6)) {
    *error = "--api-qps: a number of requests per second from 0 (no limit) to 1000000, not " +
             std::to_string(flags.api_qps);
    return false;
  }
  if (flags.api_burst < 1 || flags.api_burst > 1'000'000) {
    *error = "--api-burst: from 1 to 1000000, not " + std::to_string(flags.api_burst);
    return false;
  }
  options->api.api_qps = flags.api_qps;
  options->api.api_burst = static_cast<uint32_t>(flags.api_burst);
  options->api.watch_list = flags.api_watch_list;
  return Duration("initial-sync-timeout", flags.initial_sync_timeout,
                  &options->api.initial_sync_timeout_ms, error) &&
         Duration("api-relist-jitter", flags.api_relist_jitter, &options->api.relist_jitter_ms,
                  error) &&
         Duration("api-backoff-max", flags.api_backoff_max, &options->api.backoff.cap_ms, error) &&
         Duration("api-stall-timeout", flags.api_stall_timeout, &options->api.stall_timeout_ms,
                  error);
}

}  // namespace

bool BuildOptions(const FlagValues& flags, const k8s::EnvLookup& env, Options* options,
                  std::string* error) {
  KubednsServer::Options& server = options->server;
  if (!AnswerOptions(flags, &server, error) || !AutopathOptions(flags, &server, error) ||
      !ListenOptions(flags, env, &server, &options->warnings, error)) {
    return false;
  }
  server.metrics_prefix = DnsMetrics::SkydnsPrefixFromEnvironment();
  if (!metrics::ParseMetricsCompat(flags.metrics_compat, &server.metrics_compat)) {
    *error = "--metrics-compat: \"" + flags.metrics_compat + "\" is not none or coredns";
    return false;
  }
  if (!dns::ParseLoadBalance(flags.loadbalance, &server.loadbalance)) {
    *error = "--loadbalance: \"" + flags.loadbalance + "\" is not round_robin or off";
    return false;
  }
  server.objects_file = flags.objects_file;
  if (!ForwardOptions(flags, &server, error) || !TcpOptions(flags, &server.tcp, error)) {
    return false;
  }
  if (!WaitingOptions(flags, &server, error) ||
      !KubeDnsCompatibility(flags, &server, &options->warnings, error) ||
      !DebugAddress(flags, &server, &options->warnings, error) ||
      !QueryLogOptions(flags, &server.query_log, error)) {
    return false;
  }
  // --check-flags checks flags: the in-cluster environment comes from the pod, not from them.
  const bool in_cluster = flags.kubecfg_file.empty() && flags.kube_master_url.empty();
  if (server.objects_file.empty() && !(flags.check_flags && in_cluster) &&
      !ApiOptions(flags, env, &server, error)) {
    return false;
  }
  return Duration("initial-sync-timeout", flags.initial_sync_timeout,
                  &options->initial_sync_timeout_ms, error) &&
         Duration("lameduck", flags.lameduck, &options->lameduck_ms, error);
}

std::vector<std::string> ExpandLogQueriesExtra(std::vector<std::string> args) {
  std::vector<std::string> out;
  out.reserve(args.size() + 1);
  bool extra = false;
  for (std::string& arg : args) {
    if (arg == "--log-queries=extra" || arg == "-log-queries=extra" ||
        arg == "--log_queries=extra" || arg == "-log_queries=extra") {
      out.emplace_back("--log_queries");
      extra = true;
    } else {
      out.push_back(std::move(arg));
    }
  }
  if (extra) out.emplace_back("--log_queries_extra");
  return out;
}

std::string FlagTableLines() {
  // --log-queries also takes "extra" (ExpandLogQueriesExtra); --federations is refused.
  return "option\tlog-queries\t-\toptional\n"
         "refused\tfederations\t-\t" +
         std::string(kFederationsRetired) + "\n";
}

}  // namespace kdns::kubedns

// kubedns: authoritative DNS server for the cluster domain, fed by Kubernetes objects.
// Flags and wiring only; the program's behaviour lives in KubednsServer and the classes it
// wires (see README.md, "life of a query").
#include <curl/curl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <signal.h>

#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

#include "common/base/duration.h"
#include "common/base/time_zone.h"
#include "common/base/version.h"
#include "kubedns/kubedns_server.h"
#include "kubedns/upstream_routes.h"

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
              "ip, ip:port or [ipv6]:port; the ConfigMap's upstreamNameservers take "
              "precedence; without either, the nameservers of --resolv-conf.");
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
// Ours.
DEFINE_string(objects_file, "",
              "Serve the objects of this `kubectl get services,endpointslices -A -o json` "
              "List, reloading it when it changes.");
DEFINE_int32(ttl, 30, "TTL of the records served, in seconds.");
DEFINE_int32(dns_threads, 0, "DNS serving threads; 0: one per core.");
DEFINE_string(pod_records, "insecure",
              "a-b-c-d.ns.pod.<domain> records: insecure (any IP), verified (only the IP "
              "of a live pod in that namespace; watches Pods), disabled.");
DEFINE_int32(metrics_port, -1,
             "Port for /metrics and /cache; default: $PROMETHEUS_PORT, else 10055.");
DEFINE_string(http_bind_address, "0.0.0.0", "Address for the healthz and metrics ports.");
DEFINE_string(lameduck, "0s",
              "On SIGTERM, fail readiness and keep answering this long before exiting.");
DEFINE_string(resolv_conf, "/etc/resolv.conf",
              "Where the default upstreams come from when neither upstreamNameservers nor "
              "--nameservers gives any (re-read every --config-period).");
DEFINE_int32(forward_max, 150,
             "Distinct upstream queries in flight in the whole process (all DNS threads), as "
             "dnsmasq's --dns-forward-max; beyond it, forwarded queries are answered SERVFAIL "
             "at once.");
DEFINE_bool(check_flags, false, "Validate the flags and exit (for manifest checks).");

namespace {

[[noreturn]] void Fail(const std::string& message) {
  LOG(ERROR) << message;
  std::fprintf(stderr, "kubedns: %s\n", message.c_str());
  std::exit(2);
}

uint64_t DurationFlag(const char* name, const std::string& value) {
  auto ms = kdns::ParseDurationMs(value);
  if (!ms) Fail(std::string("--") + name + ": not a duration: \"" + value + "\"");
  return *ms;
}

uint16_t PortFlag(const char* name, int value) {
  if (value < 0 || value > 65535) Fail(std::string("--") + name + ": not a port");
  return static_cast<uint16_t>(value);
}

kdns::loop::SocketAddress Address(const char* name, const std::string& host, uint16_t port) {
  auto address = kdns::loop::SocketAddress::FromHostPort(host, port);
  if (!address) Fail(std::string("--") + name + ": not an IP address: \"" + host + "\"");
  return *address;
}

kdns::kubedns::KubednsServer::Options OptionsFromFlags() {
  kdns::kubedns::KubednsServer::Options options;
  std::string domain = FLAGS_domain;
  if (domain.empty() || domain.back() != '.') domain += '.';
  auto zone = kdns::dns::Name::FromText(domain);
  if (!zone || zone->IsRoot()) Fail("--domain: not a domain name: \"" + FLAGS_domain + "\"");
  options.answer.zone = *zone;
  if (FLAGS_ttl < 0) Fail("--ttl: must not be negative");
  options.answer.ttl_s = static_cast<uint32_t>(FLAGS_ttl);
  options.answer.soa_serial_base = static_cast<uint32_t>(std::time(nullptr));
  if (FLAGS_pod_records == "insecure") {
    options.answer.pod_records = kdns::kubedns::PodRecords::kInsecure;
  } else if (FLAGS_pod_records == "disabled") {
    options.answer.pod_records = kdns::kubedns::PodRecords::kDisabled;
  } else if (FLAGS_pod_records == "verified") {
    options.answer.pod_records = kdns::kubedns::PodRecords::kVerified;
    options.api.watch_pods = true;
  } else {
    Fail("--pod-records: insecure, verified or disabled, not \"" + FLAGS_pod_records + "\"");
  }
  options.dns_address =
      Address("dns-bind-address", FLAGS_dns_bind_address, PortFlag("dns-port", FLAGS_dns_port));
  if (FLAGS_dns_threads < 0) Fail("--dns-threads: must not be negative");
  options.dns_threads = static_cast<size_t>(FLAGS_dns_threads);
  options.healthz_address = Address("http-bind-address", FLAGS_http_bind_address,
                                    PortFlag("healthz-port", FLAGS_healthz_port));
  int metrics_port = FLAGS_metrics_port;
  if (metrics_port < 0) {
    const char* env = std::getenv("PROMETHEUS_PORT");  // kube-dns's way to set it
    metrics_port = env != nullptr && *env != '\0' ? std::atoi(env) : 10055;
  }
  options.metrics_address =
      Address("http-bind-address", FLAGS_http_bind_address, PortFlag("metrics-port", metrics_port));
  options.metrics_prefix = kdns::kubedns::DnsMetrics::SkydnsPrefixFromEnvironment();
  options.objects_file = FLAGS_objects_file;
  options.config_dir = FLAGS_config_dir;
  options.config_period_ms = DurationFlag("config-period", FLAGS_config_period);
  if (options.config_period_ms == 0) Fail("--config-period: must be positive");
  std::string nameservers_error;
  auto nameservers = kdns::kubedns::ParseNameserversFlag(FLAGS_nameservers, &nameservers_error);
  if (!nameservers) Fail("--nameservers: " + nameservers_error);
  for (const auto& nameserver : *nameservers) {
    // Forwarding to ourselves would loop every outside name until it times out.
    bool ours = nameserver.port() == options.dns_address.port() &&
                (nameserver == options.dns_address ||
                 (options.dns_address.IsWildcard() &&
                  (nameserver.HostString() == "127.0.0.1" || nameserver.HostString() == "::1")));
    if (ours) Fail("--nameservers: " + nameserver.ToString() + " is this kubedns itself");
  }
  options.nameservers = std::move(*nameservers);
  options.resolv_conf = FLAGS_resolv_conf;
  if (FLAGS_forward_max < 1) Fail("--forward-max: must be at least 1");
  options.forwarder.forward_cap =
      std::make_shared<kdns::upstream::ForwardCap>(static_cast<size_t>(FLAGS_forward_max));
  // --check-flags checks flags: the in-cluster environment comes from the pod, not from them.
  const bool in_cluster = FLAGS_kubecfg_file.empty() && FLAGS_kube_master_url.empty();
  if (options.objects_file.empty() && !(FLAGS_check_flags && in_cluster)) {
    kdns::k8s::Result<kdns::k8s::ApiConfig> config =
        !FLAGS_kubecfg_file.empty()
            ? kdns::k8s::FromKubeconfig(FLAGS_kubecfg_file)
            : (!FLAGS_kube_master_url.empty() ? kdns::k8s::FromMasterUrl(FLAGS_kube_master_url)
                                              : kdns::k8s::FromInCluster(kdns::k8s::ProcessEnv()));
    if (!config.ok()) Fail("Kubernetes API: " + config.error());
    if (!FLAGS_kubecfg_file.empty() && !FLAGS_kube_master_url.empty()) {
      config.value().server = FLAGS_kube_master_url;  // as kube-dns: the URL overrides
      while (!config.value().server.empty() && config.value().server.back() == '/') {
        config.value().server.pop_back();
      }
    }
    options.api_config = std::move(config.value());
    if (FLAGS_endpoints_source == "endpoints") {
      options.api.endpoints_source = kdns::kubedns::ApiSource::EndpointsSource::kEndpoints;
    } else if (FLAGS_endpoints_source != "endpointslices") {
      Fail("--endpoints-source: endpointslices or endpoints, not \"" + FLAGS_endpoints_source +
           "\"");
    }
    options.api.initial_sync_timeout_ms =
        DurationFlag("initial-sync-timeout", FLAGS_initial_sync_timeout);
    options.api.backoff.cap_ms = DurationFlag("api-backoff-max", FLAGS_api_backoff_max);
    options.api.stall_timeout_ms = DurationFlag("api-stall-timeout", FLAGS_api_stall_timeout);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetVersionString(kdns::kVersion);
  gflags::SetUsageMessage(
      "Authoritative DNS for the Kubernetes cluster domain.\nUsage: kubedns [flags]");
  FLAGS_logtostderr = true;  // a container logs to stderr, as kube-dns did
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  kdns::InitTimeZoneBeforeThreads();
  curl_global_init(CURL_GLOBAL_DEFAULT);  // not thread-safe: before the API thread starts
  google::InitGoogleLogging(argv[0]);
  google::InstallFailureSignalHandler();

  kdns::kubedns::KubednsServer::Options options = OptionsFromFlags();
  uint64_t sync_timeout_ms = DurationFlag("initial-sync-timeout", FLAGS_initial_sync_timeout);
  uint64_t lameduck_ms = DurationFlag("lameduck", FLAGS_lameduck);
  if (FLAGS_check_flags) return 0;

  // Signals are taken synchronously by this thread; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  kdns::kubedns::KubednsServer server(options);
  std::string error;
  if (!server.Start(&error)) Fail(error);
  LOG(INFO) << "kubedns " << kdns::kVersion << " serving " << options.answer.zone.ToText() << " on "
            << server.dns_address().ToString() << " (UDP, TCP), readiness on "
            << server.healthz_address().ToString() << ", metrics on "
            << server.metrics_address().ToString();

  timespec wait{static_cast<time_t>(sync_timeout_ms / 1000),
                static_cast<long>(sync_timeout_ms % 1000) * 1000000};
  int signal_number = sigtimedwait(&signals, nullptr, &wait);
  if (signal_number < 0 && !server.ready() && !options.objects_file.empty()) {
    LOG(ERROR) << "initial sync not done after " << FLAGS_initial_sync_timeout
               << ": cluster names are answered SERVFAIL until it is; still trying";
  }
  while (signal_number < 0) signal_number = sigwaitinfo(&signals, nullptr);
  LOG(INFO) << "signal " << signal_number << ": failing readiness, lameduck for " << FLAGS_lameduck;
  server.StartLameduck();
  if (lameduck_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(lameduck_ms));
  server.Stop();
  LOG(INFO) << "kubedns stopped";
  return 0;
}

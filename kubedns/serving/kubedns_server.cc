#include "kubedns/serving/kubedns_server.h"

#include <glog/logging.h>

#include <chrono>
#include <future>
#include <utility>

#include "common/base/heap.h"
#include "common/base/thread_name.h"
#include "common/k8s/curl_transport.h"
#include "common/limits/limits.h"
#include "common/loop/loop.h"
#include "common/loop/task_queue.h"
#include "common/metrics/process_metrics.h"
#include "common/server/debug_http.h"
#include "common/upstream/resolv_conf.h"
#include "kubedns/records/cache_dump.h"
#include "kubedns/serving/notify_sender.h"
#include "kubedns/sources/objects_file_source.h"
#include "kubedns/sources/source.h"

namespace kdns::kubedns {
namespace {

// --autopath-search, or the search list of kubedns's own resolv.conf (with dnsPolicy:
// Default, the node's), as CoreDNS's autopath takes it.
std::vector<dns::Name> AutopathSearch(const KubednsServer::Options& options) {
  if (options.autopath_search) return *options.autopath_search;
  upstream::ResolvConf conf;
  std::string error;
  if (!upstream::LoadResolvConf(options.resolv_conf, &conf, &error)) {
    LOG(WARNING) << "autopath: no search domains of the node: " << error;
    return {};
  }
  std::vector<dns::Name> search;
  for (const std::string& domain : conf.search) {
    std::optional<dns::Name> name = dns::Name::FromText(domain);
    if (!name) {
      LOG(WARNING) << "autopath: search domain \"" << domain << "\" of " << options.resolv_conf
                   << " is not a domain name; skipped";
      continue;
    }
    search.push_back(*name);
  }
  return search;
}

}  // namespace

namespace {

uint64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Applies the source's changes to the tree and publishes a snapshot after each one.
// Lives on the source thread.
class KubednsServer::Publisher final : public RecordSink {
 public:
  using ListKind = RecordTreeWriter::ListKind;

  explicit Publisher(KubednsServer& server)
      : server_(server),
        filter_(server.options_.filter),
        filtered_(*server.filtered_objects_),
        invalid_pod_names_(*server.invalid_pod_names_) {
    if (const auto& zone = server.options_.answer.kubeslice_zone) {
      std::string text = zone->ToText();
      text.pop_back();  // the root's dot
      writer_.multicluster().SetKubesliceZone(std::move(text));
    }
    writer_.multicluster().SetLimits(server.options_.import_limits);
    if (server.options_.answer.zonal) writer_.KeepZones();
  }

  void BeginLoad() override { writer_.BeginLoad(); }
  void EndLoad() override {
    writer_.EndLoad();
    PublishCompleteLoad();
  }
  // The objects delivered stay in their new version (RecordTreeWriter::AbortLoad).
  void AbortLoad() override {
    writer_.AbortLoad();
    PublishCompleteLoad();
  }
  void BeginList(ListKind kind) override { writer_.BeginList(kind); }
  void EndList(ListKind kind) override {
    writer_.EndList(kind);
    PublishCompleteLoad();
  }
  // Objects the filter does not serve go to the tree as deletes (records/object_filter.h).
  void UpsertService(const k8s::Service& service) override {
    if (!filter_.Serves(service)) {
      filtered_.Inc();
      return DeleteService(service.meta.ns, service.meta.name);
    }
    Change(ListKind::kServices, &RecordTreeWriter::UpsertService, service);
  }
  void DeleteService(std::string_view ns, std::string_view name) override {
    Change(ListKind::kServices, &RecordTreeWriter::DeleteService, ns, name);
  }
  void UpsertSlice(const k8s::EndpointSlice& slice) override {
    if (!filter_.ServesNamespace(slice.meta.ns)) {
      filtered_.Inc();
      return DeleteSlice(slice.meta.ns, slice.meta.name);
    }
    if (filter_.names_pods()) {
      k8s::EndpointSlice named = slice;
      invalid_pod_names_.Inc(filter_.NamePods(named));
      return Change(ListKind::kSlices, &RecordTreeWriter::UpsertSlice, named);
    }
    Change(ListKind::kSlices, &RecordTreeWriter::UpsertSlice, slice);
  }
  void DeleteSlice(std::string_view ns, std::string_view name) override {
    Change(ListKind::kSlices, &RecordTreeWriter::DeleteSlice, ns, name);
  }
  void UpsertEndpoints(const k8s::Endpoints& endpoints) override {
    if (!filter_.ServesNamespace(endpoints.meta.ns)) {
      filtered_.Inc();
      return DeleteEndpoints(endpoints.meta.ns, endpoints.meta.name);
    }
    if (filter_.names_pods()) {
      k8s::Endpoints named = endpoints;
      for (k8s::EndpointSlice& slice : named.slices) {
        invalid_pod_names_.Inc(filter_.NamePods(slice));
      }
      return Change(ListKind::kEndpoints, &RecordTreeWriter::UpsertEndpoints, named);
    }
    Change(ListKind::kEndpoints, &RecordTreeWriter::UpsertEndpoints, endpoints);
  }
  void DeleteEndpoints(std::string_view ns, std::string_view name) override {
    Change(ListKind::kEndpoints, &RecordTreeWriter::DeleteEndpoints, ns, name);
  }
  void UpsertPod(const k8s::Pod& pod) override {
    if (!filter_.ServesNamespace(pod.meta.ns)) {
      filtered_.Inc();
      return DeletePod(pod.meta.ns, pod.meta.name);
    }
    Change(ListKind::kPods, &RecordTreeWriter::UpsertPod, pod);
  }
  void DeletePod(std::string_view ns, std::string_view name) override {
    Change(ListKind::kPods, &RecordTreeWriter::DeletePod, ns, name);
  }
  void ReplaceServiceImports(std::vector<k8s::ServiceImport> imports) override {
    ChangeMulticluster(&MulticlusterWriter::ReplaceServiceImports, imports);
  }
  void UpsertServiceImport(const k8s::ServiceImport& import) override {
    ChangeMulticluster(&MulticlusterWriter::UpsertServiceImport, import);
  }
  void DeleteServiceImport(std::string_view ns, std::string_view name) override {
    ChangeMulticluster(&MulticlusterWriter::DeleteServiceImport, ns, name);
  }
  void ReplaceMulticlusterSlices(std::vector<k8s::EndpointSlice> slices) override {
    ChangeMulticluster(&MulticlusterWriter::ReplaceSlices, slices);
  }
  void UpsertMulticlusterSlice(const k8s::EndpointSlice& slice) override {
    ChangeMulticluster(&MulticlusterWriter::UpsertSlice, slice);
  }
  void DeleteMulticlusterSlice(std::string_view ns, std::string_view name) override {
    ChangeMulticluster(&MulticlusterWriter::DeleteSlice, ns, name);
  }
  void ReplaceKubesliceServiceImports(std::vector<k8s::KubesliceServiceImport> imports) override {
    ChangeMulticluster(&MulticlusterWriter::ReplaceKubesliceServiceImports, imports);
  }
  void UpsertKubesliceServiceImport(const k8s::KubesliceServiceImport& import) override {
    ChangeMulticluster(&MulticlusterWriter::UpsertKubesliceServiceImport, import);
  }
  void DeleteKubesliceServiceImport(std::string_view ns, std::string_view name) override {
    ChangeMulticluster(&MulticlusterWriter::DeleteKubesliceServiceImport, ns, name);
  }
  void MulticlusterSynced(MulticlusterZone zone) override {
    ChangeMulticluster(zone == MulticlusterZone::kMcs ? &MulticlusterWriter::MarkMcsSynced
                                                      : &MulticlusterWriter::MarkKubesliceSynced);
  }
  void Synced() override {
    writer_.MarkSynced();
    Publish();
    server_.synced_ = true;
    const Snapshot::Stats stats = server_.snapshots_.Current()->stats();
    LOG(INFO) << "initial sync done: " << stats.services << " services, " << stats.endpoints
              << " endpoint addresses";
  }

 private:
  // One change of a cluster kind (a watch event, or an object of a list or load): the writer's
  // `change`, then published as that kind's changes are (PublishUnlessListing).
  template <class... Params, class... Args>
  void Change(ListKind kind, void (RecordTreeWriter::*change)(Params...), Args&&... args) {
    (writer_.*change)(std::forward<Args>(args)...);
    PublishUnlessListing(kind);
  }
  // One change of the multicluster zones: the multicluster writer's `change`, then published.
  template <class... Params, class... Args>
  void ChangeMulticluster(void (MulticlusterWriter::*change)(Params...), Args&&... args) {
    (writer_.multicluster().*change)(std::forward<Args>(args)...);
    Publish();
  }

  // Not inside a load, but for PublishDue: its other changes are published at EndLoad.
  void Publish() {
    if (!writer_.loading()) PublishNow();
  }
  void PublishNow() {
    server_.snapshots_.Publish(writer_.Publish());
    server_.last_publish_unix_ms_ = UnixMs();
  }
  // After a file load or a complete list, the heap the load freed goes back to the OS (see
  // common/base/heap.h): now when nothing else holds the superseded snapshot, else when its
  // last reader lets it go (Snapshot::ReleaseHeapWhenFreed).
  void PublishCompleteLoad() {
    std::shared_ptr<const Snapshot> superseded = server_.snapshots_.Current();
    if (superseded != nullptr) superseded->ReleaseHeapWhenFreed();
    Publish();
    if (superseded == nullptr) ReleaseFreeHeap();
  }
  // The items of a streamed list (or load) are published at its end, and on the way every
  // RecordTreeWriter::kListPublishBytes of new records, so that a list that changes
  // everything frees the old records as it goes instead of holding two trees.
  void PublishUnlessListing(ListKind kind) {
    if (writer_.PublishDue()) {
      PublishNow();
    } else if (!writer_.listing(kind)) {
      Publish();
    }
  }

  KubednsServer& server_;
  const ObjectFilter filter_;
  metrics::Counter& filtered_;
  metrics::Counter& invalid_pod_names_;
  RecordTreeWriter writer_;
};

namespace {

// The table every thread's Forwarder shares; counting replies by rcode only for CoreDNS's
// coredns_forward_responses_total.
std::shared_ptr<upstream::UpstreamTable> NewUpstreamTable(metrics::MetricsCompat compat) {
  auto table = std::make_shared<upstream::UpstreamTable>();
  if (compat == metrics::MetricsCompat::kCoredns) table->CountReplies();
  return table;
}

}  // namespace

// kubedns has no cache and no forwarding cap of CoreDNS's kind: those families stay out.
metrics::CorednsSources KubednsServer::CorednsSources() const {
  metrics::CorednsSources sources;
  sources.server = "dns://:" + std::to_string(options_.dns_address.port());
  sources.queries = "kdns_kubedns_queries_total";
  sources.duration = "kdns_kubedns_query_duration_seconds";
  sources.upstream_prefix = "kdns_kubedns_upstream";
  sources.all_upstreams_down = R"(kdns_kubedns_forward_failures_total{reason="upstream_down"})";
  return sources;
}

KubednsServer::KubednsServer(Options options)
    : options_(std::move(options)),
      answerer_(options_.answer),
      dns_metrics_(registry_, options_.metrics_prefix),
      upstream_table_(NewUpstreamTable(options_.metrics_compat)),
      forward_metrics_(registry_, upstream_table_),
      autopath_(options_.autopath ? std::make_unique<const Autopath>(options_.answer.zone,
                                                                     AutopathSearch(options_))
                                  : nullptr),
      autopath_metrics_(autopath_ ? std::make_unique<AutopathMetrics>(registry_, *autopath_)
                                  : nullptr),
      query_log_(options_.query_log, SteadyClock::Instance(), server::QueryLog::GlogSink()),
      switchboard_(
          server::Switchboard::Options{
              options_.query_log.detail, options_.debug_address, kDefaultDebugPort,
              [this](const loop::SocketAddress& address) { return MakeDebugServer(address); }},
          query_log_),
      handler_shared_{answerer_,
                      snapshots_,
                      routes_,
                      dns_metrics_,
                      forward_metrics_,
                      upstream_table_,
                      options_.forwarder,
                      std::make_shared<server::WaitingBudget>(options_.max_waiting_queries),
                      autopath_.get(),
                      autopath_metrics_.get()} {
  if (autopath_) {
    std::string candidates;
    for (const dns::Name& suffix : autopath_->suffixes()) {
      candidates += suffix.IsRoot() ? " N." : " N." + suffix.ToText();
    }
    LOG(INFO) << "autopath: N.<namespace>.svc." << options_.answer.zone.ToText()
              << " without records walks" << candidates;
  }
  // One set of forwarding budgets for every DNS thread (--forward-max is per process).
  if (!handler_shared_.forwarder.budgets) {
    handler_shared_.forwarder.budgets = std::make_shared<upstream::ForwardBudgets>();
  }
  std::string error;
  CHECK(
      server::MakeRateLimits(options_.rate_limits, handler_shared_.waiting, &rate_limits_, &error))
      << "the rate-limit flags were checked by BuildOptions: " << error;
  // Always: the kube-dns ConfigMap may turn it on (kdns.logQueries); off, a query costs
  // one relaxed load (QueryLog::Sample).
  handler_shared_.query_log = &query_log_;
  handler_shared_.forwarder_totals = &forwarder_totals_;
  handler_shared_.loadbalance = options_.loadbalance;
  RegisterMetrics();
}

KubednsServer::~KubednsServer() { Stop(); }

void KubednsServer::RegisterMetrics() {
  // The forwarder's side (distinct upstream queries); forward_metrics_ counts the clients'.
  upstream::RegisterForwarderMetrics(registry_, "kdns_kubedns_forwarder", forwarder_totals_);
  limits::RegisterLimitMetrics(registry_);
  server::RegisterRateLimitMetrics(registry_, rate_limits_);
  metrics::RegisterProcessMetrics(registry_, "kubedns");
  registry_.AddCallbackGauge("kdns_kubedns_ready", "1 once the first full sync is done.",
                             [this] { return ready() ? 1.0 : 0.0; });
  registry_.AddCallbackGauge("kdns_kubedns_snapshot_generation",
                             "Generation of the record tree snapshot being served.",
                             [this] { return static_cast<double>(snapshots_.generation()); });
  registry_.AddCallbackGauge(
      "kdns_kubedns_last_publish_timestamp_seconds",
      "When the last change to the records was published (Unix time).",
      [this] { return static_cast<double>(last_publish_unix_ms_.load()) / 1000.0; });
  auto stat = [this](uint64_t Snapshot::Stats::*field) {
    return [this, field] {
      auto current = snapshots_.Current();
      return current ? static_cast<double>(current->stats().*field) : 0.0;
    };
  };
  filtered_objects_ = &registry_.AddCounter(
      "kdns_kubedns_filtered_objects_total",
      "Service, EndpointSlice, Endpoints and Pod changes not served because of --namespaces or "
      "--labels.");
  invalid_pod_names_ = &registry_.AddCounter(
      "kdns_kubedns_endpoint_pod_name_invalid_total",
      "Endpoints named by their dashed IP under --endpoint-pod-names because their pod's name is "
      "not a DNS label.");
  registry_.AddCallbackGauge("kdns_kubedns_services", "Services served.",
                             stat(&Snapshot::Stats::services));
  registry_.AddCallbackGauge("kdns_kubedns_endpoint_addresses",
                             "Endpoint addresses held (all slices, ready or not).",
                             stat(&Snapshot::Stats::endpoints));
  registry_.AddCallbackGauge("kdns_kubedns_reverse_entries", "IPs with PTR records.",
                             stat(&Snapshot::Stats::reverse_entries));
  registry_.AddCallbackGauge(
      "kdns_kubedns_records_bytes",
      "Bytes the records hold (compact arrays, names, reverse index entries), to compare RSS with.",
      stat(&Snapshot::Stats::records_bytes));
  registry_.AddCallbackGauge(
      "kdns_kubedns_pod_ips",
      "Distinct (namespace, IP) pairs of live pods (--pod-records=verified).",
      stat(&Snapshot::Stats::pod_ips));
  // The multicluster zones, only when served (their sync state per resource is
  // kdns_kubedns_api_synced{resource="serviceimports"...} with the API source).
  auto multicluster = [this](uint64_t MulticlusterSnapshot::Stats::*field) {
    return [this, field] {
      auto current = snapshots_.Current();
      return current ? static_cast<double>(current->multicluster().stats().*field) : 0.0;
    };
  };
  auto zone_synced = [this](bool (MulticlusterSnapshot::*synced)() const) {
    return [this, synced] {
      auto current = snapshots_.Current();
      return current && (current->multicluster().*synced)() ? 1.0 : 0.0;
    };
  };
  if (options_.answer.multicluster_zone) {
    registry_.AddCallbackGauge("kdns_kubedns_mcs_service_imports",
                               "MCS ServiceImports (multicluster.x-k8s.io) served.",
                               multicluster(&MulticlusterSnapshot::Stats::mcs_imports));
    registry_.AddCallbackGauge(
        "kdns_kubedns_mcs_endpoint_addresses",
        "Endpoint addresses held in MCS EndpointSlices (every cluster, ready or not).",
        multicluster(&MulticlusterSnapshot::Stats::mcs_endpoints));
    registry_.AddCallbackGauge(
        "kdns_kubedns_mcs_unnamed_slices",
        "MCS EndpointSlices without a multicluster.kubernetes.io/source-cluster label (not "
        "served).",
        multicluster(&MulticlusterSnapshot::Stats::unnamed_slices));
    registry_.AddCallbackGauge("kdns_kubedns_mcs_synced",
                               "1 once the MCS zone's resources have listed (or are absent).",
                               zone_synced(&MulticlusterSnapshot::mcs_synced));
  }
  if (options_.answer.kubeslice_zone) {
    registry_.AddCallbackGauge("kdns_kubedns_kubeslice_service_imports",
                               "kubeslice ServiceImports served.",
                               multicluster(&MulticlusterSnapshot::Stats::kubeslice_imports));
    registry_.AddCallbackGauge("kdns_kubedns_kubeslice_endpoint_addresses",
                               "kubeslice ServiceImport endpoints with an IP.",
                               multicluster(&MulticlusterSnapshot::Stats::kubeslice_endpoints));
    registry_.AddCallbackGauge("kdns_kubedns_kubeslice_synced",
                               "1 once the kubeslice zone's resources have listed (or are absent).",
                               zone_synced(&MulticlusterSnapshot::kubeslice_synced));
  }
}

bool KubednsServer::Start(std::string* error) {
  // The source first, so that a good objects file is loaded before the first query.
  std::promise<void> started;
  source_running_ = true;
  source_thread_ = std::thread([this, &started] { RunSource(&started); });
  started.get_future().wait();

  // The forwarding routes before the first query; stub host names are resolved (through
  // our own DNS port) once the config thread runs.
  ForwardConfig::Options forward;
  forward.config_dir = options_.config_dir;
  forward.period_ms = options_.config_period_ms;
  forward.cluster_zone = options_.answer.zone;
  forward.flag_nameservers = options_.nameservers;
  forward.flag_route_options = options_.route_options;
  forward.resolv_conf = options_.resolv_conf;
  forward.on_switches = [this](const config::RuntimeSwitches& switches) {
    switchboard_.Apply(switches);
  };
  forward_config_ = std::make_unique<ForwardConfig>(
      forward, forward_metrics_,
      [this](const std::shared_ptr<const UpstreamRoutes>& routes) { PublishRoutes(routes); });
  forward_config_->Poll(HostResolver());

  server::DnsServer::Options dns;
  dns.listen_address = options_.dns_address;
  dns.threads = server::ServingThreads(options_.dns_threads, "--dns-threads");
  dns.udp.receiver_thread = options_.receiver_threads;
  dns.shared_sockets = options_.receiver_threads;
  dns.admission = kAdmissionPolicy;
  dns.client_address = options_.client_address;
  dns.tcp = options_.tcp;
  dns.clients = rate_limits_.clients;
  dns.responses = rate_limits_.responses;
  dns_server_ =
      std::make_unique<server::DnsServer>(dns, [this](const server::ThreadContext& context) {
        return std::make_unique<DnsHandler>(context, handler_shared_);
      });
  if (!dns_server_->Start(error)) {
    *error = "DNS on " + options_.dns_address.ToString() + ": " + *error;
    Stop();
    return false;
  }
  loop::SocketAddress self = dns_server_->local_address();
  if (self.IsWildcard()) {
    self = *loop::SocketAddress::FromHostPort(self.is_v4() ? "127.0.0.1" : "::1", self.port());
  }
  forward_config_->Start(self);

  http::Server::Options healthz;
  healthz.bind_address = options_.healthz_address;
  healthz_http_ = std::make_unique<http::ServerThread>(healthz);
  healthz_http_->Handle("/readiness", [this](const http::Request&) {
    return ready() ? http::Response::Text(200, "ok")
                   : http::Response::Text(
                         503, lameduck_ ? "shutting down\n" : "waiting for the first sync\n");
  });
  healthz_http_->Handle("/healthz",
                        [](const http::Request&) { return http::Response::Text(200, "ok"); });
  auto metrics_handler = [this](const http::Request&) {
    std::string text = registry_.Render();
    if (options_.metrics_compat == metrics::MetricsCompat::kCoredns) {
      text = metrics::WithCorednsFamilies(std::move(text), CorednsSources());
    }
    http::Response response = http::Response::Text(200, std::move(text));
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return response;
  };
  http::ServerThread* metrics_thread = healthz_http_.get();
  if (!(options_.metrics_address == options_.healthz_address)) {
    http::Server::Options metrics;
    metrics.bind_address = options_.metrics_address;
    metrics_http_ = std::make_unique<http::ServerThread>(metrics);
    metrics_thread = metrics_http_.get();
  }
  metrics_thread->Handle("/metrics", metrics_handler);
  // Debug data only on the debug address: every pod reaches the other ports.
  server::RefuseDebugPaths(*healthz_http_);
  if (metrics_http_) server::RefuseDebugPaths(*metrics_http_);
  if (!healthz_http_->Start(error)) {
    *error = "healthz on " + options_.healthz_address.ToString() + ": " + *error;
    Stop();
    return false;
  }
  if (metrics_http_ && !metrics_http_->Start(error)) {
    *error = "metrics on " + options_.metrics_address.ToString() + ": " + *error;
    Stop();
    return false;
  }
  if (!switchboard_.Start(error)) {
    Stop();
    return false;
  }
  return true;
}

const loop::SocketAddress& KubednsServer::metrics_address() const {
  return metrics_http_ ? metrics_http_->local_address() : healthz_http_->local_address();
}

loop::SocketAddress KubednsServer::debug_address() const { return switchboard_.debug_address(); }

void KubednsServer::RunSource(std::promise<void>* started) {
  SetThreadName("source");
  loop::Loop loop;
  {
    loop::TaskQueue tasks(loop);
    Publisher publisher(*this);
    std::unique_ptr<k8s::CurlTransport> transport;  // before the source, which uses it
    std::unique_ptr<RecordSource> source;
    if (!options_.objects_file.empty()) {
      ObjectsFileSource::Options file;
      file.path = options_.objects_file;
      file.poll_interval_ms = options_.objects_poll_ms;
      source = std::make_unique<ObjectsFileSource>(loop, publisher, registry_, file);
    } else if (options_.api_config) {
      LOG(INFO) << "following the Kubernetes API at " << options_.api_config->server;
      transport = std::make_unique<k8s::CurlTransport>(loop, *options_.api_config);
      source = std::make_unique<ApiSource>(loop, *transport, publisher, registry_, options_.api);
    }
    std::unique_ptr<NotifySender> notify;
    if (!options_.notify_targets.empty()) {
      notify = std::make_unique<NotifySender>(loop, snapshots_, answerer_, registry_,
                                              options_.notify_targets);
      std::string error;
      if (!notify->Start(&error)) {
        // Not fatal: the caches' own SOA poll still bounds how stale their negatives get.
        LOG(ERROR) << "--notify: " << error << "; the caches will rely on their SOA poll";
        notify.reset();
      }
    }
    source_poster_ = tasks.poster();
    if (source) source->Start();
    started->set_value();
    while (source_running_.load()) loop.RunOnce();
    if (source) source->Stop();
  }
  if (!loop.Close()) LOG(ERROR) << "source loop closed with open handles";
}

std::shared_ptr<const UpstreamRoutes> KubednsServer::routes() const {
  std::shared_ptr<const UpstreamRoutes> routes = routes_.Current();
  return routes ? routes : std::make_shared<const UpstreamRoutes>();
}

void KubednsServer::PublishRoutes(const std::shared_ptr<const UpstreamRoutes>& routes) {
  routes_.Publish(routes);
}

std::unique_ptr<http::ServerThread> KubednsServer::MakeDebugServer(
    const loop::SocketAddress& address) {
  auto debug = server::MakeDebugServer(address, rate_limits_.clients);
  debug->Handle("/cache", [this](const http::Request&) {
    http::Response response = http::Response::Text(200, CacheJson(snapshots_.Current().get()));
    response.content_type = "application/json";
    return response;
  });
  return debug;
}

void KubednsServer::Stop() {
  if (forward_config_) forward_config_->Stop();  // posts nothing more
  if (healthz_http_) healthz_http_->Stop();
  if (metrics_http_) metrics_http_->Stop();
  switchboard_.Stop();
  if (dns_server_) dns_server_->Stop();
  if (source_thread_.joinable()) {
    source_running_ = false;
    source_poster_.Post([] {});  // wake the source loop so it sees the flag
    source_thread_.join();
  }
}

}  // namespace kdns::kubedns

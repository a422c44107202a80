#include "kubedns/kubedns_server.h"

#include <glog/logging.h>

#include <chrono>
#include <future>

#include "common/k8s/curl_transport.h"
#include "common/loop/loop.h"
#include "common/loop/task_queue.h"
#include "kubedns/cache_dump.h"
#include "kubedns/objects_file_source.h"
#include "kubedns/source.h"

namespace kdns::kubedns {

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
  explicit Publisher(KubednsServer& server) : server_(server) {}

  void ReplaceAll(RecordTreeWriter::ObjectSet objects) override {
    writer_.ReplaceAll(objects);
    Publish();
  }
  void ReplaceServices(std::vector<k8s::Service> services) override {
    writer_.ReplaceServices(services);
    Publish();
  }
  void ReplaceSlices(std::vector<k8s::EndpointSlice> slices) override {
    writer_.ReplaceSlices(slices);
    Publish();
  }
  void ReplaceEndpoints(std::vector<k8s::Endpoints> endpoints) override {
    writer_.ReplaceEndpoints(endpoints);
    Publish();
  }
  void UpsertService(const k8s::Service& service) override {
    writer_.UpsertService(service);
    Publish();
  }
  void DeleteService(std::string_view ns, std::string_view name) override {
    writer_.DeleteService(ns, name);
    Publish();
  }
  void UpsertSlice(const k8s::EndpointSlice& slice) override {
    writer_.UpsertSlice(slice);
    Publish();
  }
  void DeleteSlice(std::string_view ns, std::string_view name) override {
    writer_.DeleteSlice(ns, name);
    Publish();
  }
  void UpsertEndpoints(const k8s::Endpoints& endpoints) override {
    writer_.UpsertEndpoints(endpoints);
    Publish();
  }
  void DeleteEndpoints(std::string_view ns, std::string_view name) override {
    writer_.DeleteEndpoints(ns, name);
    Publish();
  }
  void ReplacePods(std::vector<k8s::Pod> pods) override {
    writer_.ReplacePods(pods);
    Publish();
  }
  void UpsertPod(const k8s::Pod& pod) override {
    writer_.UpsertPod(pod);
    Publish();
  }
  void DeletePod(std::string_view ns, std::string_view name) override {
    writer_.DeletePod(ns, name);
    Publish();
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
  void Publish() {
    server_.snapshots_.Publish(writer_.Publish());
    server_.last_publish_unix_ms_ = UnixMs();
  }

  KubednsServer& server_;
  RecordTreeWriter writer_;
};

// One per DNS thread: reads the current snapshot and answers.
class KubednsServer::Handler final : public server::QueryHandler {
 public:
  explicit Handler(KubednsServer& server) : server_(server), reader_(server.snapshots_) {}

  void HandleQuery(server::Request& request) override {
    auto start = std::chrono::steady_clock::now();
    AnswerResult result = server_.answerer_.Answer(
        reader_.Get(), request.query(),
        request.transport() == server::Transport::kTcp ? Transport::kTcp : Transport::kUdp,
        request.response_buffer());
    if (!result.response.empty()) request.Reply(result.response);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    server_.dns_metrics_.Record(result, result.response.size(), seconds);
  }

 private:
  KubednsServer& server_;
  SnapshotHolder<Snapshot>::Reader reader_;
};

KubednsServer::KubednsServer(Options options)
    : options_(std::move(options)),
      answerer_(options_.answer),
      dns_metrics_(registry_, options_.metrics_prefix) {
  RegisterMetrics();
}

KubednsServer::~KubednsServer() { Stop(); }

void KubednsServer::RegisterMetrics() {
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
  registry_.AddCallbackGauge("kdns_kubedns_services", "Services served.",
                             stat(&Snapshot::Stats::services));
  registry_.AddCallbackGauge("kdns_kubedns_endpoint_addresses",
                             "Endpoint addresses held (all slices, ready or not).",
                             stat(&Snapshot::Stats::endpoints));
  registry_.AddCallbackGauge("kdns_kubedns_reverse_entries", "IPs with PTR records.",
                             stat(&Snapshot::Stats::reverse_entries));
  registry_.AddCallbackGauge(
      "kdns_kubedns_pod_ips",
      "Distinct (namespace, IP) pairs of live pods (--pod-records=verified).",
      stat(&Snapshot::Stats::pod_ips));
}

bool KubednsServer::Start(std::string* error) {
  // The source first, so that a good objects file is loaded before the first query.
  std::promise<void> started;
  source_running_ = true;
  source_thread_ = std::thread([this, &started] { RunSource(&started); });
  started.get_future().wait();

  server::DnsServer::Options dns;
  dns.listen_address = options_.dns_address;
  dns.threads = options_.dns_threads;
  dns_server_ = std::make_unique<server::DnsServer>(
      dns, [this](const server::ThreadContext&) { return std::make_unique<Handler>(*this); });
  if (!dns_server_->Start(error)) {
    *error = "DNS on " + options_.dns_address.ToString() + ": " + *error;
    Stop();
    return false;
  }

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
    http::Response response = http::Response::Text(200, registry_.Render());
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return response;
  };
  auto cache_handler = [this](const http::Request&) {
    http::Response response = http::Response::Text(200, CacheJson(snapshots_.Current().get()));
    response.content_type = "application/json";
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
  metrics_thread->Handle("/cache", cache_handler);
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
  return true;
}

const loop::SocketAddress& KubednsServer::metrics_address() const {
  return metrics_http_ ? metrics_http_->local_address() : healthz_http_->local_address();
}

void KubednsServer::RunSource(std::promise<void>* started) {
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
    source_poster_ = tasks.poster();
    if (source) source->Start();
    started->set_value();
    while (source_running_.load()) loop.RunOnce();
    if (source) source->Stop();
  }
  if (!loop.Close()) LOG(ERROR) << "source loop closed with open handles";
}

void KubednsServer::Stop() {
  if (healthz_http_) healthz_http_->Stop();
  if (metrics_http_) metrics_http_->Stop();
  if (dns_server_) dns_server_->Stop();
  if (source_thread_.joinable()) {
    source_running_ = false;
    source_poster_.Post([] {});  // wake the source loop so it sees the flag
    source_thread_.join();
  }
}

}  // namespace kdns::kubedns

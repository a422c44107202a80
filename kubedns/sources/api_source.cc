#include "kubedns/sources/api_source.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/metrics/collector.h"
#include "kubedns/sources/api_resources.h"

namespace kdns::kubedns {
namespace {

using Resource = ApiSource::Resource;

// Sub-millisecond to a second: publishing a snapshot of a large tree takes milliseconds.
const std::vector<double> kPublishBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                             0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};

}  // namespace

std::string_view ApiSource::ToString(Resource resource) {
  switch (resource) {
    case Resource::kServices:
      return "services";
    case Resource::kEndpointSlices:
      return "endpointslices";
    case Resource::kEndpoints:
      return "endpoints";
    case Resource::kPods:
      return "pods";
    case Resource::kServiceImports:
      return "serviceimports";
    case Resource::kMulticlusterSlices:
      return "multicluster_endpointslices";
    case Resource::kKubesliceServiceImports:
      return "kubeslice_serviceimports";
  }
  return "?";
}

struct ApiSource::Metrics {
  metrics::CounterFamily& events;
  metrics::CounterFamily& lists;
  metrics::CounterFamily& relists;
  metrics::CounterFamily& errors;
  metrics::CounterFamily& restarts;
  metrics::Histogram& event_to_publish;
};

class ApiSource::SyncedCollector final : public metrics::Collector {
 public:
  explicit SyncedCollector(std::shared_ptr<const Progress> progress)
      : progress_(std::move(progress)) {}
  void Collect(std::vector<metrics::Sample>& out) const override {
    for (size_t i = 0; i < kResourceCount; ++i) {
      uint8_t state = progress_->state[i].load(std::memory_order_relaxed);
      if (state == 0) continue;
      out.push_back({{std::string(ToString(static_cast<Resource>(i)))}, state == 2 ? 1.0 : 0.0});
    }
  }

 private:
  std::shared_ptr<const Progress> progress_;
};

class ApiSource::AgeCollector final : public metrics::Collector {
 public:
  explicit AgeCollector(std::shared_ptr<const Progress> progress)
      : progress_(std::move(progress)) {}
  void Collect(std::vector<metrics::Sample>& out) const override {
    uint64_t now_ms = progress_->clock.NowMs();
    for (size_t i = 0; i < kResourceCount; ++i) {
      uint64_t last_ms = progress_->last_ms[i].load(std::memory_order_relaxed);
      if (last_ms == 0) continue;  // not listed yet (or not watched): synced says 0
      double age_s = static_cast<double>(now_ms - std::min(now_ms, last_ms)) / 1000.0;
      out.push_back({{std::string(ToString(static_cast<Resource>(i)))}, age_s});
    }
  }

 private:
  std::shared_ptr<const Progress> progress_;
};

// One resource: its reflector, what it delivers handed to the sink (api_resources.h), its
// progress and its metrics.
class ApiSource::Watcher final : public k8s::ReflectorHandler {
 public:
  Watcher(ApiSource& source, Resource resource)
      : source_(source),
        resource_(resource),
        label_(ToString(resource)),
        lists_(source.metrics_->lists.WithLabels({label_})),
        relists_(source.metrics_->relists.WithLabels({label_})) {
    for (auto type : {k8s::EventType::kAdded, k8s::EventType::kModified, k8s::EventType::kDeleted,
                      k8s::EventType::kBookmark}) {
      events_[static_cast<size_t>(type)] =
          &source.metrics_->events.WithLabels({label_, k8s::ToString(type)});
    }
    SetState(1);
    k8s::ReflectorOptions options = ReflectorOptionsFor(resource, source.options_);
    options.random = source.random_;
    reflector_ = std::make_unique<k8s::Reflector>(*source.limited_, source.timers_, source.clock_,
                                                  *this, std::move(options));
  }

  void Start() { reflector_->Start(); }
  void Stop() { reflector_->Stop(); }
  void Retire() {
    retired_ = true;
    failing_ = false;
    reflector_->Stop();
    SetState(0);
  }

  Resource resource() const { return resource_; }
  const std::string& label() const { return label_; }
  const k8s::Reflector& reflector() const { return *reflector_; }
  bool listed() const { return listed_; }
  bool retired() const { return retired_; }
  bool failing() const { return failing_; }
  const std::string& last_error() const { return last_error_; }

  // Services, EndpointSlices, Endpoints and Pods stream into the sink as they are decoded
  // (BeginList, an Upsert per object, EndList), so a LIST is never held whole; the small
  // multicluster lists are collected by the reflector and replaced whole (OnList).
  void OnListBegin() override {
    if (auto kind = StreamedKind(resource_)) {
      source_.sink_.BeginList(*kind);
      return;
    }
    ReflectorHandler::OnListBegin();
  }

  void OnListObject(k8s::Object&& object) override {
    if (!StreamedKind(resource_)) {
      ReflectorHandler::OnListObject(std::move(object));
      return;
    }
    UpsertListed(source_.sink_, object);
  }

  void OnListEnd(const k8s::ListMeta& meta) override {
    if (auto kind = StreamedKind(resource_)) {
      source_.sink_.EndList(*kind);
      Applied();
      return;
    }
    ReflectorHandler::OnListEnd(meta);  // → OnList
  }

  void OnList(k8s::ObjectList list) override {
    ReplaceList(source_.sink_, resource_, std::move(list));
    Applied();
  }

  // A complete list has reached the sink.
  void Applied() {
    lists_.Inc();
    Progressed();
    if (absent_) {
      absent_ = false;
      LOG(INFO) << "Kubernetes API now serves " << label_ << " at " << reflector_->path();
    }
    Listed();
  }

  // A multicluster resource whose LIST answers 404: its CRD is not installed (or not at
  // this group/version). Nothing of it exists, which the sink learns once; the reflector
  // retries with backoff, trying the other group/versions.
  void Absent(const std::string& message) {
    if (absent_) return;
    absent_ = true;
    LOG(WARNING) << "Kubernetes API does not serve " << label_ << " (" << message
                 << "); answering as if none existed, retrying with backoff (logged once)";
    ReplaceWithNone(source_.sink_, resource_);
    Listed();
  }

  void Listed() {
    if (listed_) return;
    listed_ = true;
    SetState(2);
    if (IsMulticluster(resource_)) {
      source_.MaybeZoneSynced(ZoneOf(resource_));
    } else {
      source_.MaybeSynced();
    }
  }

  void OnEvent(const k8s::WatchEvent& event,
               std::chrono::steady_clock::time_point received) override {
    events_[static_cast<size_t>(event.type)]->Inc();
    Progressed();
    ApplyEvent(source_.sink_, resource_, event);
    source_.metrics_->event_to_publish.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - received).count());
  }

  void OnBookmark(const k8s::ResourceVersion&) override {
    events_[static_cast<size_t>(k8s::EventType::kBookmark)]->Inc();
    Progressed();
  }

  void OnError(const k8s::ReflectorError& error) override {
    source_.metrics_->errors.WithLabels({label_, error.code}).Inc();
    last_error_ = error.message;
    if (resource_ == Resource::kEndpointSlices && !listed_ &&
        error.phase == k8s::ReflectorPhase::kList &&
        (error.http_status == 404 || error.http_status == 403) &&
        source_.options_.endpoints_source == EndpointsSource::kEndpointSlices) {
      source_.FallBackToEndpoints(error.message);  // stops this reflector
      return;
    }
    if (IsMulticluster(resource_) && error.phase == k8s::ReflectorPhase::kList &&
        error.http_status == 404) {
      Absent(error.message);
      return;
    }
    // A single object or line that does not decode says nothing about reachability.
    if (error.code == "decode") return;
    failing_ = true;
    source_.OnTrouble(*this, error.message);
  }

  void OnRestart(k8s::RestartReason reason) override {
    source_.metrics_->restarts.WithLabels({label_, k8s::ToString(reason)}).Inc();
    if (reason == k8s::RestartReason::kExpired) relists_.Inc();
    if (reason == k8s::RestartReason::kStall) {
      failing_ = true;
      source_.OnTrouble(*this, "the watch stalled");
    }
  }

  void OnHealthy() override {
    if (!failing_) return;
    failing_ = false;
    source_.OnRecovered();
  }

 private:
  void SetState(uint8_t state) {
    source_.progress_->state[static_cast<size_t>(resource_)].store(state,
                                                                   std::memory_order_relaxed);
  }
  void Progressed() {
    source_.progress_->last_ms[static_cast<size_t>(resource_)].store(
        std::max<uint64_t>(1, source_.clock_.NowMs()), std::memory_order_relaxed);
  }

  ApiSource& source_;
  const Resource resource_;
  const std::string label_;
  metrics::Counter& lists_;
  metrics::Counter& relists_;
  std::array<metrics::Counter*, 5> events_{};  // by EventType; ERROR unused
  std::unique_ptr<k8s::Reflector> reflector_;
  bool listed_ = false;
  bool absent_ = false;  // the last LIST answered 404 (see Absent)
  bool retired_ = false;
  bool failing_ = false;
  std::string last_error_;
};

ApiSource::ApiSource(loop::Loop& loop, k8s::ApiTransport& transport, RecordSink& sink,
                     metrics::Registry& registry, Options options)
    : ApiSource(loop, transport, sink, registry, options, Environment{}) {}

ApiSource::ApiSource(loop::Loop& loop, k8s::ApiTransport& transport, RecordSink& sink,
                     metrics::Registry& registry, Options options, Environment environment)
    : sink_(sink),
      options_(options),
      clock_(environment.clock != nullptr ? *environment.clock : SteadyClock::Instance()),
      own_timers_(environment.timers != nullptr ? nullptr
                                                : std::make_unique<k8s::LoopTimers>(loop)),
      timers_(environment.timers != nullptr ? *environment.timers : *own_timers_),
      random_(environment.random ? std::move(environment.random) : k8s::DefaultRandom()),
      progress_(std::make_shared<Progress>(clock_)),
      initial_sync_timer_(timers_.NewTimer()) {
  metrics_ = std::make_unique<Metrics>(Metrics{
      .events = registry.AddCounterFamily("kdns_kubedns_api_events_total",
                                          "Kubernetes watch events received, by resource and type.",
                                          {"resource", "type"}),
      .lists = registry.AddCounterFamily(
          "kdns_kubedns_api_lists_total",
          "Complete Kubernetes LISTs applied (first LIST and re-LISTs), by resource.",
          {"resource"}),
      .relists = registry.AddCounterFamily(
          "kdns_kubedns_api_relists_total",
          "Kubernetes re-LISTs because a watch or a continue token expired (410 Gone).",
          {"resource"}),
      .errors = registry.AddCounterFamily(
          "kdns_kubedns_api_errors_total",
          "Failed Kubernetes API requests and undecodable data, by resource and code (HTTP "
          "status, transport, decode).",
          {"resource", "code"}),
      .restarts = registry.AddCounterFamily("kdns_kubedns_api_watch_restarts_total",
                                            "Kubernetes watches restarted, by resource and reason.",
                                            {"resource", "reason"}),
      .event_to_publish = registry.AddHistogram(
          "kdns_kubedns_api_event_to_publish_seconds",
          "Time from a watch event's arrival to its change being published to the DNS threads.",
          kPublishBuckets),
  });
  registry.AddCollector(
      "kdns_kubedns_api_synced", "1 once the resource's first complete LIST has been applied.",
      metrics::MetricType::kGauge, {"resource"}, std::make_shared<SyncedCollector>(progress_));
  registry.AddCollector(
      "kdns_kubedns_api_last_sync_age_seconds",
      "Seconds since the last complete LIST, watch event or bookmark of the resource: how "
      "stale the served records may be.",
      metrics::MetricType::kGauge, {"resource"}, std::make_shared<AgeCollector>(progress_));

  metrics::Counter& delayed = registry.AddCounter(
      "kdns_kubedns_api_requests_delayed_total",
      "Kubernetes API requests that waited for the client-side QPS limit (--api-qps, "
      "--api-burst).");
  limited_ = std::make_unique<k8s::RateLimitedTransport>(
      transport, timers_, clock_,
      k8s::RateLimitedTransport::Options{.qps = options_.api_qps,
                                         .burst = options_.api_burst,
                                         .on_delayed = [&delayed] { delayed.Inc(); }});

  AddWatcher(Resource::kServices);
  AddWatcher(options_.endpoints_source == EndpointsSource::kEndpoints ? Resource::kEndpoints
                                                                      : Resource::kEndpointSlices);
  if (options_.watch_pods) AddWatcher(Resource::kPods);
  if (options_.watch_multicluster) {
    AddWatcher(Resource::kServiceImports);
    AddWatcher(Resource::kMulticlusterSlices);
  }
  if (options_.watch_kubeslice) AddWatcher(Resource::kKubesliceServiceImports);
}

ApiSource::~ApiSource() { Stop(); }

void ApiSource::AddWatcher(Resource resource) {
  watchers_.push_back(std::make_unique<Watcher>(*this, resource));
}

void ApiSource::Start() {
  CHECK(!started_) << "ApiSource::Start called twice";
  started_ = true;
  start_ms_ = clock_.NowMs();
  std::string resources;
  for (const auto& watcher : watchers_) {
    resources += (resources.empty() ? "" : ", ") + watcher->label();
  }
  LOG(INFO) << "Kubernetes API: listing and watching " << resources;
  if (options_.initial_sync_timeout_ms > 0) {
    initial_sync_timer_->Start(options_.initial_sync_timeout_ms, [this] { OnInitialSyncTimer(); });
  }
  // Index, not iterator: a 404 on the first EndpointSlice LIST cannot come back inside
  // Start() (the transport never calls back from Get()), but a watcher may be added later.
  for (size_t i = 0; i < watchers_.size() && !stopped_; ++i) watchers_[i]->Start();
}

void ApiSource::Stop() {
  if (stopped_) return;
  stopped_ = true;
  initial_sync_timer_->Stop();
  for (auto& watcher : watchers_) watcher->Stop();
}

const k8s::Reflector* ApiSource::reflector(Resource resource) const {
  for (const auto& watcher : watchers_) {
    if (watcher->resource() == resource) return &watcher->reflector();
  }
  return nullptr;
}

bool ApiSource::using_endpoints() const {
  return options_.endpoints_source == EndpointsSource::kEndpoints || fell_back_;
}

void ApiSource::FallBackToEndpoints(const std::string& why) {
  if (fell_back_ || stopped_) return;
  fell_back_ = true;
  LOG(WARNING) << "Kubernetes API does not serve EndpointSlices to us (" << why
               << "); using v1 Endpoints (/api/v1/endpoints) instead";
  for (auto& watcher : watchers_) {
    if (watcher->resource() == Resource::kEndpointSlices) watcher->Retire();
  }
  AddWatcher(Resource::kEndpoints);
  watchers_.back()->Start();
}

void ApiSource::MaybeZoneSynced(MulticlusterZone zone) {
  auto& synced = zone_synced_[static_cast<size_t>(zone)];
  if (synced) return;
  for (const auto& watcher : watchers_) {
    if (IsMulticluster(watcher->resource()) && ZoneOf(watcher->resource()) == zone &&
        !watcher->listed()) {
      return;
    }
  }
  synced = true;
  LOG(INFO) << "Kubernetes API: "
            << (zone == MulticlusterZone::kMcs ? "multicluster (MCS)" : "kubeslice")
            << " zone synced in " << clock_.NowMs() - start_ms_ << " ms";
  sink_.MulticlusterSynced(zone);
}

void ApiSource::MaybeSynced() {
  if (synced_) return;
  for (const auto& watcher : watchers_) {
    if (IsMulticluster(watcher->resource())) continue;  // their zones sync on their own
    if (!watcher->retired() && !watcher->listed()) return;
  }
  synced_ = true;
  initial_sync_timer_->Stop();
  LOG(INFO) << "Kubernetes API: initial sync done in " << clock_.NowMs() - start_ms_ << " ms";
  sink_.Synced();
}

std::string ApiSource::PendingSummary() const {
  std::string summary;
  for (const auto& watcher : watchers_) {
    if (watcher->retired() || watcher->listed() || IsMulticluster(watcher->resource())) continue;
    summary += (summary.empty() ? "" : "; ") + watcher->label();
    if (!watcher->last_error().empty()) summary += " (last error: " + watcher->last_error() + ")";
  }
  return summary;
}

void ApiSource::OnInitialSyncTimer() {
  if (synced_ || stopped_) return;
  LOG(ERROR) << "Kubernetes API: no initial sync after " << (clock_.NowMs() - start_ms_) / 1000
             << " s; waiting for " << PendingSummary()
             << ". Cluster names are answered SERVFAIL and readiness fails until then; still "
                "trying";
  initial_sync_timer_->Start(options_.initial_sync_timeout_ms, [this] { OnInitialSyncTimer(); });
}

uint64_t ApiSource::StalenessMs() const {
  uint64_t now_ms = clock_.NowMs();
  uint64_t oldest_ms = now_ms;
  for (const auto& watcher : watchers_) {
    if (watcher->retired()) continue;
    uint64_t last_ms = progress_->last_ms[static_cast<size_t>(watcher->resource())].load(
        std::memory_order_relaxed);
    if (last_ms != 0) oldest_ms = std::min(oldest_ms, last_ms);
  }
  return now_ms - oldest_ms;
}

void ApiSource::OnTrouble(const Watcher& watcher, const std::string& what) {
  if (!synced_) return;  // the initial-sync ERROR covers this time
  uint64_t now_ms = clock_.NowMs();
  if (!outage_) {
    outage_ = true;
    outage_start_ms_ = now_ms;
    last_outage_log_ms_.reset();
  }
  if (last_outage_log_ms_ && now_ms - *last_outage_log_ms_ < options_.unreachable_log_interval_ms) {
    return;
  }
  last_outage_log_ms_ = now_ms;
  LOG(WARNING) << "Kubernetes API unreachable or failing (" << watcher.label() << ": " << what
               << "); answers continue from the last snapshot, which may be "
               << StalenessMs() / 1000 << " s old; retrying";
}

void ApiSource::OnRecovered() {
  if (!outage_) return;
  for (const auto& watcher : watchers_) {
    if (!watcher->retired() && watcher->failing()) return;
  }
  outage_ = false;
  LOG(INFO) << "Kubernetes API reachable again after " << (clock_.NowMs() - outage_start_ms_) / 1000
            << " s; watching again";
}

}  // namespace kdns::kubedns

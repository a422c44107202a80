// ApiSource: the record source that lists and watches the Kubernetes API server. One
// k8s::Reflector per resource, each listing and watching on its own:
//   Services        /api/v1/services                            always
//   EndpointSlices  /apis/discovery.k8s.io/v1/endpointslices    by default
//   Endpoints (v1)  /api/v1/endpoints                           with EndpointsSource::kEndpoints,
//                   or when the EndpointSlice LIST answers 404 (a server without
//                   discovery.k8s.io/v1) or 403 (kube-dns's own ClusterRole, which has no
//                   endpointslices, kept when only the images were swapped) before it ever
//                   succeeded: logged once, then used instead
//   Pods            /api/v1/pods                                only with watch_pods
//                   (--pod-records=verified)
//   ServiceImports  /apis/multicluster.x-k8s.io/v1alpha1/serviceimports (or v1beta1)
//                   with watch_multicluster (--multicluster-zone), and the EndpointSlices
//                   labelled multicluster.kubernetes.io/service-name (labelSelector)
//   kubeslice       /apis/networking.kubeslice.io/v1beta1/serviceimports (or
//                   mesh.avesha.io/v1beta1) with watch_kubeslice (--kubeslice-zone)
// The multicluster resources are CRDs that may not be installed: a LIST answering 404 tries
// the resource's other group/version next, retries with backoff, is logged once (and once
// more when the resource appears), and counts as an empty list. They never hold back
// Synced(): each zone has its own MulticlusterSynced(zone), once its resources have listed
// or been found absent.
// A resource's complete list (first LIST, re-LIST after 410) streams into the sink as the
// reflector decodes it: BeginList(kind), UpsertService / UpsertSlice / UpsertEndpoints /
// UpsertPod per object, EndList(kind), which drops what the list did not deliver; the sink
// publishes at EndList, and on the way once much has changed (RecordTreeWriter::PublishDue:
// a re-LIST that changes everything frees the old records as it goes), each object then
// whole in its old or its new version; neither the body nor the decoded list is ever held
// whole. The small multicluster lists are replaced
// whole (Replace*). Watch events go to Upsert* / Delete*.
//
// How each resource is listed and watched, and how what it delivers becomes sink calls, is
// api_resources.h's; ApiSource runs the reflectors and keeps track of sync, outages and
// metrics.
//
// Requests to the API server: every reflector's go through one RateLimitedTransport
// (api_qps, api_burst; client-go's 5 and 10 by default). The first LIST of each resource asks
// the API server's watch cache (resourceVersion=0), re-LISTs ask it for at least the last RV
// seen, after a random delay of at most relist_jitter_ms (reflector.h). Synced() is called once,
// when every watched resource has delivered its first complete list; until then cluster names are
// answered SERVFAIL and readiness fails.
//
// Pods are watched like the rest (UpsertPod / DeletePod); the sink keeps only each live
// pod's namespace and IPs, for `a-b-c-d.ns.pod.Z` answers under --pod-records=verified.
//
// Logs: an ERROR when the first sync has not finished after initial_sync_timeout_ms, repeated
// at that interval while it goes on. After the first sync, when the API server cannot be
// reached (transport errors, HTTP errors, stalled watches), a WARNING that answers continue
// from the last snapshot and how old it may be (at most once per unreachable_log_interval_ms),
// and an INFO when every resource is back.
//
// Metrics (on the Registry given to the constructor; one ApiSource per registry):
//   kdns_kubedns_api_events_total{resource,type}          watch events, type ADDED, MODIFIED,
//                                                         DELETED, BOOKMARK
//   kdns_kubedns_api_lists_total{resource}                complete lists applied
//   kdns_kubedns_api_relists_total{resource}              re-LISTs after 410 Gone
//   kdns_kubedns_api_errors_total{resource,code}          code: HTTP status, "transport",
//                                                         "decode"
//   kdns_kubedns_api_watch_restarts_total{resource,reason}  reasons: k8s::RestartReason
//   kdns_kubedns_api_synced{resource}                     1 once the first list is applied
//   kdns_kubedns_api_last_sync_age_seconds{resource}      since the last list, event or
//                                                         bookmark: how stale we may be
//   kdns_kubedns_api_event_to_publish_seconds             from an event's last byte to the
//                                                         sink call (which publishes) returning
//   kdns_kubedns_api_requests_delayed_total               requests that waited for the
//                                                         client-side QPS limit
//
// Thread: lives on the given loop's thread and calls the sink there (see source.h). The
// metrics are read from the rendering thread through atomics only.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/clock.h"
#include "common/k8s/api_transport.h"
#include "common/k8s/backoff.h"
#include "common/k8s/rate_limiter.h"
#include "common/k8s/reflector.h"
#include "common/k8s/reflector_timers.h"
#include "common/loop/loop.h"
#include "common/metrics/registry.h"
#include "kubedns/sources/source.h"

namespace kdns::kubedns {

class ApiSource final : public RecordSource {
 public:
  enum class EndpointsSource : uint8_t {
    kEndpointSlices,  // discovery.k8s.io/v1, falling back to v1 Endpoints on a 404 or 403
    kEndpoints,       // v1 Endpoints only
  };
  enum class Resource : uint8_t {
    kServices,
    kEndpointSlices,
    kEndpoints,
    kPods,
    kServiceImports,           // multicluster.x-k8s.io
    kMulticlusterSlices,       // EndpointSlices with the MCS service-name label
    kKubesliceServiceImports,  // networking.kubeslice.io / mesh.avesha.io
  };
  static constexpr size_t kResourceCount = 7;
  // "services", "endpointslices", "endpoints", "pods", "serviceimports",
  // "multicluster_endpointslices", "kubeslice_serviceimports": the metric label.
  static std::string_view ToString(Resource resource);

  struct Options {
    EndpointsSource endpoints_source = EndpointsSource::kEndpointSlices;
    bool watch_pods = false;
    bool watch_multicluster = false;  // --multicluster-zone
    bool watch_kubeslice = false;     // --kubeslice-zone
    // --labels: sent as the labelSelector of every Services LIST and WATCH; empty: none.
    std::string service_label_selector;
    uint32_t page_size = 500;
    uint64_t list_timeout_ms = 60'000;
    uint32_t watch_timeout_min_s = 300;
    uint32_t watch_timeout_max_s = 600;
    uint64_t stall_timeout_ms = 90'000;
    uint64_t relist_jitter_ms = 5'000;  // bound of the random delay before a re-LIST
    bool watch_list = false;            // list by streaming watch-list where served (reflector.h)
    double api_qps = 5.0;               // client-side limit on API requests; <= 0: none
    uint32_t api_burst = 10;
    k8s::Backoff::Options backoff;
    uint64_t initial_sync_timeout_ms = 60'000;
    uint64_t unreachable_log_interval_ms = 60'000;
  };

  // Tests run on simulated time; empty members mean the real thing (SteadyClock, timers on
  // the loop, a seeded PRNG). The clock must outlive the registry (the staleness gauge reads
  // it at scrape time).
  struct Environment {
    const Clock* clock = nullptr;
    k8s::TimerFactory* timers = nullptr;
    k8s::Backoff::Random random;
  };

  // `transport`, `sink` and `registry` must outlive the source.
  ApiSource(loop::Loop& loop, k8s::ApiTransport& transport, RecordSink& sink,
            metrics::Registry& registry, Options options);
  ApiSource(loop::Loop& loop, k8s::ApiTransport& transport, RecordSink& sink,
            metrics::Registry& registry, Options options, Environment environment);
  ~ApiSource() override;
  ApiSource(const ApiSource&) = delete;
  ApiSource& operator=(const ApiSource&) = delete;

  // Sends the first LISTs. Call once.
  void Start() override;
  void Stop() override;

  bool synced() const { return synced_; }
  // The reflector of a resource being watched (or retired, for EndpointSlices after the
  // fallback), null when that resource is not used. For tests and status pages.
  const k8s::Reflector* reflector(Resource resource) const;
  bool using_endpoints() const;

 private:
  class Watcher;
  struct Metrics;
  class SyncedCollector;
  class AgeCollector;
  // What the synced and staleness gauges read from the rendering thread, by Resource.
  // Shared with the registry, which may outlive the source.
  struct Progress {
    explicit Progress(const Clock& c) : clock(c) {}
    const Clock& clock;
    // 0: not watched (never, or EndpointSlices after the fallback: no series), 1: watched,
    // not listed yet, 2: listed.
    std::array<std::atomic<uint8_t>, kResourceCount> state{};
    // Clock ms of the last list, event or bookmark; 0: none yet.
    std::array<std::atomic<uint64_t>, kResourceCount> last_ms{};
  };

  void AddWatcher(Resource resource);
  void FallBackToEndpoints(const std::string& why);
  void MaybeSynced();
  void MaybeZoneSynced(MulticlusterZone zone);
  void OnInitialSyncTimer();
  void OnTrouble(const Watcher& watcher, const std::string& what);
  void OnRecovered();
  uint64_t StalenessMs() const;
  std::string PendingSummary() const;

  RecordSink& sink_;
  const Options options_;
  const Clock& clock_;
  std::unique_ptr<k8s::TimerFactory> own_timers_;
  k8s::TimerFactory& timers_;
  k8s::Backoff::Random random_;
  std::shared_ptr<Progress> progress_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<k8s::OneShotTimer> initial_sync_timer_;
  // Every reflector's requests go through it (after the timers it uses).
  std::unique_ptr<k8s::RateLimitedTransport> limited_;
  std::vector<std::unique_ptr<Watcher>> watchers_;  // after the timers and limiter they use

  bool started_ = false;
  bool stopped_ = false;
  bool synced_ = false;
  std::array<bool, 2> zone_synced_{};  // by MulticlusterZone
  uint64_t start_ms_ = 0;
  bool fell_back_ = false;
  bool outage_ = false;
  uint64_t outage_start_ms_ = 0;
  std::optional<uint64_t> last_outage_log_ms_;
};

}  // namespace kdns::kubedns

#include "sidecar/sidecar.h"

#include <chrono>

#include "common/limits/limits.h"
#include "common/metrics/process_metrics.h"
#include "common/metrics/text_format.h"
#include "common/server/debug_http.h"
#include "sidecar/health.h"

namespace kdns::sidecar {

Sidecar::Sidecar(loop::Loop& loop, Options options, const SidecarTuning& tuning)
    : loop_(loop), options_(std::move(options)), probe_families_(registry_) {
  limits::RegisterLimitMetrics(registry_);
  metrics::RegisterProcessMetrics(registry_, "sidecar");
  for (const ProbeOption& probe : options_.probes) {
    DnsProbe::Options probe_options;
    probe_options.probe = probe;
    probe_options.prometheus_namespace = options_.prometheus_namespace;
    probe_options.timeout_ms = tuning.probe_timeout_ms;
    probe_options.first_delay = tuning.first_delay;
    probes_.push_back(
        std::make_unique<DnsProbe>(loop_, std::move(probe_options), registry_, probe_families_));
  }
  DnsmasqPoller::Options poller_options;
  poller_options.server = options_.dnsmasq;
  poller_options.poll_interval_ms = options_.dnsmasq_poll_interval_ms;
  poller_options.timeout_ms = tuning.poll_timeout_ms;
  poller_options.prometheus_namespace = options_.prometheus_namespace;
  poller_ = std::make_unique<DnsmasqPoller>(loop_, std::move(poller_options), registry_);

  http::Server::Options http_options;
  http_options.bind_address = options_.prometheus;
  http_ = std::make_unique<http::Server>(loop_, http_options);
  for (const auto& probe : probes_) {
    const DnsProbe* p = probe.get();
    http_->Handle("/healthcheck/" + p->option().label,
                  [p](const http::Request&) { return HealthResponse(p->status()); });
  }
  http_->Handle("/healthz", [](const http::Request&) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
    return http::Response::Text(200, HealthzBody(ns / 1'000'000'000, ns % 1'000'000'000));
  });
  http_->Handle(options_.prometheus_path, [this](const http::Request&) {
    http::Response response = http::Response::Text(200, registry_.Render());
    response.content_type = std::string(metrics::kContentType);
    return response;
  });
  // No debug data here either (the kubelet and every pod reach this port); asking for it is
  // counted as on the DNS servers' ports.
  server::RefuseDebugPaths(*http_);
}

Sidecar::~Sidecar() = default;

bool Sidecar::Start(std::string* error) {
  std::string why;
  if (!http_->Start(&why)) {
    *error = "HTTP on " + options_.prometheus.ToString() + ": " + why;
    return false;
  }
  for (const auto& probe : probes_) {
    if (!probe->Start(error)) return false;
  }
  return poller_->Start(error);
}

}  // namespace kdns::sidecar

// Sidecar: the whole program on one libuv loop, wired from Options: one DnsProbe per
// --probe, the DnsmasqPoller, and the HTTP server on --prometheus-addr:--prometheus-port:
//
//   GET /healthcheck/<label>   that probe's status (health.h); one exact route per label
//   GET /healthz               200 "ok (<time>)\n"
//   GET <--prometheus-path>    the registry in the Prometheus text format
//   anything else              404; methods other than GET and HEAD 405 (http::Server);
//                              request size and time bounded by http::Server::Options
//
// Thread: the loop's thread only (HTTP handlers, probes and the poller all run there).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/http/server.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/metrics/registry.h"
#include "sidecar/dns_probe.h"
#include "sidecar/dnsmasq_poller.h"
#include "sidecar/options.h"

namespace kdns::sidecar {

// Knobs for tests; the defaults are the program's.
struct SidecarTuning {
  DnsProbe::FirstDelay first_delay = &DnsProbe::RandomFirstDelay;
  uint64_t probe_timeout_ms = 2000;
  uint64_t poll_timeout_ms = 2000;
};

class Sidecar {
 public:
  Sidecar(loop::Loop& loop, Options options, const SidecarTuning& tuning = SidecarTuning());
  ~Sidecar();
  Sidecar(const Sidecar&) = delete;
  Sidecar& operator=(const Sidecar&) = delete;

  // Binds the HTTP port and starts the probes and the poller. False with *error (e.g. the
  // port is in use).
  [[nodiscard]] bool Start(std::string* error);

  loop::SocketAddress http_address() const { return http_->GetLocalAddress(); }
  const std::vector<std::unique_ptr<DnsProbe>>& probes() const { return probes_; }
  const DnsmasqPoller& poller() const { return *poller_; }
  const metrics::Registry& registry() const { return registry_; }

 private:
  loop::Loop& loop_;
  Options options_;
  metrics::Registry registry_;
  ProbeFamilies probe_families_;
  std::vector<std::unique_ptr<DnsProbe>> probes_;
  std::unique_ptr<DnsmasqPoller> poller_;
  std::unique_ptr<http::Server> http_;
};

}  // namespace kdns::sidecar

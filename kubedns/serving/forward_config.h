// ForwardConfig: keeps kubedns's forwarding routes (upstream_routes.h) current. When the
// --config-dir ConfigMap changes (a loop::FileWatcher: inotify at once, and a poll every
// --config-period, kube-dns's default 10 s) it reads it as one snapshot
// (common/config/kube_dns_config.h), re-reads /etc/resolv.conf, resolves the host names of
// stub servers, and when the routes differ from the last ones it publishes them
// (KubednsServer hands them to every DNS thread).
//
// A ConfigMap version that does not validate is logged once, counted
// (kdns_kubedns_forward_config_reloads_total{result="rejected"}) and ignored: the previous
// configuration stays, as with kube-dns. A directory that cannot be read is treated the same
// way; at start-up, without a previous configuration, kubedns forwards without one (kube-dns
// starts "with default values"). The ConfigMap's runtime switches (kdns.logQueries,
// kdns.debugData) are read with it and handed to Options::on_switches. resolv.conf is read only
// while it matters (no
// --nameservers); if it cannot be read, its last nameservers stay.
//
// Stub servers given as host names are resolved by asking kubedns itself, as kube-dns's
// nanny resolves them through kubedns: cluster names from the records, other names through
// the upstreams. The config thread runs a libuv loop: a pass reads the inputs, looks the
// stub host names up at once with c-ares (common/ares, A and AAAA), and builds and
// publishes the routes when every answer is in. A pass due while the last one still waits
// for answers runs once those are in. A name that stops resolving keeps its last addresses,
// as in the nanny (common/config/stub_hosts.h says why).
//
// Thread: Poll() runs on the thread that calls it before Start(), then only on the
// config thread Start() creates; Stop() and routes() from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/base/ip_address.h"
#include "common/config/kube_dns_config.h"
#include "common/config/stub_hosts.h"
#include "common/dns/name.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/task_queue.h"
#include "kubedns/serving/forward_metrics.h"
#include "kubedns/serving/upstream_routes.h"

namespace kdns::kubedns {

class ForwardConfig {
 public:
  struct Options {
    std::string config_dir;  // empty: no ConfigMap
    uint64_t period_ms = 10'000;
    dns::Name cluster_zone;
    std::vector<upstream::Upstream> flag_nameservers;  // --nameservers
    std::string resolv_conf = "/etc/resolv.conf";
    // --route-options (common/upstream/route_options.h).
    std::vector<upstream::RouteOptionsEntry> flag_route_options;
    // Called with the ConfigMap's runtime switches (common/config/runtime_switches.h) at
    // the first accepted version and whenever an accepted version changes them; on the
    // thread that polls. Null: not called.
    std::function<void(const config::RuntimeSwitches&)> on_switches;
  };
  using PublishFn = std::function<void(std::shared_ptr<const UpstreamRoutes> routes)>;

  ForwardConfig(Options options, ForwardMetrics& metrics, PublishFn publish);
  ~ForwardConfig();  // Stop()
  ForwardConfig(const ForwardConfig&) = delete;
  ForwardConfig& operator=(const ForwardConfig&) = delete;

  // One pass: reads what changed, builds the routes (stub host names through `resolver`;
  // none and nothing logged about them when it is empty) and publishes them if they differ
  // from the last published.
  void Poll(const HostResolver& resolver);

  // Starts the config thread: a pass at once, then at every change and every period, stub
  // host names asked of `resolver_server` (kubedns's own DNS port). Once.
  void Start(const loop::SocketAddress& resolver_server);
  // Ends the config thread; no pass runs after it returns.
  void Stop();

  // How long the config thread waits for each stub host name (one try).
  static constexpr uint64_t kLookupTimeoutMs = 2000;

  // The routes last published (empty routes before the first Poll).
  std::shared_ptr<const UpstreamRoutes> routes() const;

 private:
  void ReadConfigMap();
  void ReadResolvConf();
  // Poll's two halves: read what changed; build the routes and publish them.
  void ReadInputs();
  void Publish(const HostResolver& resolver);
  // The stub servers given as host names in the configuration in effect.
  std::vector<dns::Name> StubHostNames() const;
  // The config thread's body (see the header comment).
  void Run(const loop::SocketAddress& resolver_server,
           std::promise<loop::TaskQueue::Poster>* started);

  const Options options_;
  ForwardMetrics& metrics_;
  const PublishFn publish_;

  // Poll()'s state.
  config::KubeDnsConfig config_;     // in effect
  config::ConfigDirData last_data_;  // last read, valid or not
  bool seen_data_ = false;
  bool data_valid_ = true;
  bool switches_told_ = false;                    // on_switches was called (with config_.switches)
  std::string last_read_error_;                   // logged once per distinct error
  std::vector<loop::SocketAddress> resolv_conf_;  // last good read
  std::string resolv_error_;
  std::vector<std::string> last_warnings_;
  // The stub host names' last known addresses: the config thread's (Run) only.
  config::StubHostAddresses stub_hosts_;

  mutable std::mutex routes_mu_;
  std::shared_ptr<const UpstreamRoutes> routes_;  // Guarded by routes_mu_.

  // The config thread's task queue (empty before Start and once the thread ended); Stop()
  // posts the end of its loop through it.
  loop::TaskQueue::Poster poster_;
  loop::Loop* run_loop_ = nullptr;  // the config thread's loop, for its tasks only
  std::thread thread_;
};

}  // namespace kdns::kubedns

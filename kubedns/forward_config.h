// ForwardConfig: keeps kubedns's forwarding routes (upstream_routes.h) current. Every
// --config-period (kube-dns's default 10 s) it reads the --config-dir ConfigMap as one
// snapshot (common/config/kube_dns_config.h), re-reads /etc/resolv.conf, resolves the host
// names of stub servers, and when the routes differ from the last ones it publishes them
// (KubednsServer hands them to every DNS thread).
//
// A ConfigMap version that does not validate is logged once, counted
// (kdns_kubedns_forward_config_reloads_total{result="rejected"}) and ignored: the previous
// configuration stays, as with kube-dns. A directory that cannot be read is treated the same
// way; at start-up, without a previous configuration, kubedns forwards without one (kube-dns
// starts "with default values"). resolv.conf is read only while it matters (no
// --nameservers); if it cannot be read, its last nameservers stay.
//
// Stub servers given as host names are resolved by asking kubedns itself (ResolveThrough),
// as kube-dns's nanny resolves them through kubedns: cluster names from the records, other
// names through the upstreams.
//
// Thread: Poll() runs on the thread that calls it before Start(), then only on the
// config thread Start() creates; routes() from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/base/ip_address.h"
#include "common/config/kube_dns_config.h"
#include "common/dns/name.h"
#include "common/loop/socket_address.h"
#include "kubedns/forward_metrics.h"
#include "kubedns/upstream_routes.h"

namespace kdns::kubedns {

class ForwardConfig {
 public:
  struct Options {
    std::string config_dir;  // empty: no ConfigMap
    uint64_t period_ms = 10'000;
    dns::Name cluster_zone;
    std::vector<loop::SocketAddress> flag_nameservers;  // --nameservers
    std::string resolv_conf = "/etc/resolv.conf";
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

  // Starts the config thread: Poll at once, then every period. Once.
  void Start(HostResolver resolver);
  void Stop();

  // The routes last published (empty routes before the first Poll).
  std::shared_ptr<const UpstreamRoutes> routes() const;

 private:
  void ReadConfigMap();
  void ReadResolvConf();
  void Run();

  const Options options_;
  ForwardMetrics& metrics_;
  const PublishFn publish_;

  // Poll()'s state.
  config::KubeDnsConfig config_;     // in effect
  config::ConfigDirData last_data_;  // last read, valid or not
  bool seen_data_ = false;
  bool data_valid_ = true;
  std::string last_read_error_;                         // logged once per distinct error
  std::vector<upstream::UpstreamAddress> resolv_conf_;  // last good read
  std::string resolv_error_;
  std::vector<std::string> last_warnings_;

  mutable std::mutex routes_mu_;
  std::shared_ptr<const UpstreamRoutes> routes_;  // Guarded by routes_mu_.

  std::mutex run_mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // Guarded by run_mu_.
  HostResolver resolver_;
  std::thread thread_;
};

// Resolves `host` (A and AAAA) by asking the DNS server at `server` over UDP, waiting at
// most `timeout_ms` for each answer (blocking: for the config thread). The addresses, or an
// empty list with a one-line *error.
std::vector<IpAddress> ResolveThrough(const loop::SocketAddress& server, const dns::Name& host,
                                      int timeout_ms, std::string* error);

}  // namespace kdns::kubedns

// Nanny: the whole program without its command line. Reads the kube-dns ConfigMap
// directory, validates and translates it, resolves stub host names, and runs the child
// through the Supervisor, applying every accepted change:
//
//   in-place mode (the child is frontend-cache): the nanny binds the DNS sockets and hands
//     them over (LISTEN_FDS); the child gets `--servers-file=<runDir>/servers.conf
//     --metrics-textfile=<runDir>/nanny.prom` after the user's arguments; a change rewrites
//     the servers file atomically and sends SIGHUP: the routing is swapped in place and the
//     cache survives for every domain whose route did not change. No process is started or
//     stopped, so no query is lost.
//   restart mode (any other child, e.g. dnsmasq): the generated `--server=...` and
//     `--no-resolv` arguments follow the user's; with -restartDnsmasq a change stops the
//     child, waits for its exit, and starts a new one (kube-dns's behaviour, without its
//     overlap); without it, changes are logged and not applied (kube-dns too).
//
//   node-local mode (-localip, node_local.h): in-place mode as the per-node cache of a
//     DaemonSet: the sockets on the -localip addresses (IP_FREEBIND), which the NodeLocal
//     puts on an interface and covers with NOTRACK rules; the cluster zones routed to the
//     -upstreamsvc ClusterIP; at SIGTERM the rules removed before the child stops, the
//     addresses after it (what another node cache of the node needs is left to it).
//
// A rejected update keeps the configuration that runs (log line with the reason, metric).
// An unreadable or invalid directory at start-up means the default configuration (no stub
// domains, no upstreams), as kube-dns.
//
// Thread: the loop's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ares/channel.h"
#include "common/config/kube_dns_config.h"
#include "common/loop/file_watcher.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"
#include "common/metrics/registry.h"
#include "nanny/command_runner.h"
#include "nanny/crash_loop.h"
#include "nanny/listen_sockets.h"
#include "nanny/nanny_metrics.h"
#include "nanny/node_local.h"
#include "nanny/orphan_reaper.h"
#include "nanny/stub_hosts.h"
#include "nanny/supervisor.h"
#include "nanny/translate.h"

namespace kdns::nanny {

enum class ApplyMode { kInPlace, kRestart };

class Nanny {
 public:
  struct Options {
    std::string config_dir = "/etc/k8s/dns/dnsmasq-nanny";
    uint64_t sync_interval_ms = 10'000;
    uint64_t debounce_ms = 20;
    bool restart_on_change = false;  // -restartDnsmasq (restart mode only)
    ApplyMode mode = ApplyMode::kInPlace;
    std::vector<std::string> child_argv;  // -dnsmasqExec, then the arguments after "--"
    std::string child_name = "frontend-cache";
    std::string trampoline;  // the nanny's own executable
    loop::SocketAddress kubedns_server;
    std::string cluster_domain = "cluster.local";
    // -kubednsZones: more zones kubedns serves (the multicluster zones), routed to
    // kubedns_server in the child's generated servers; lower case, without trailing dots.
    std::vector<std::string> kubedns_zones;
    uint64_t log_interval_ms = 0;       // SIGUSR1 to the child (0: never)
    uint64_t stub_refresh_ms = 60'000;  // stub host names looked up again
    uint64_t stub_retry_ms = 1'000;     // ... sooner while one has no address
    uint64_t lookup_timeout_ms = 1'000;
    std::string run_dir;                      // servers file, metrics file (must exist)
    std::vector<loop::SocketAddress> listen;  // in-place: the sockets to hold
    // In-place: the child's --threads (0: its default, which the nanny works out the same
    // way, from the container's CPUs): past two threads, a socket pair per thread and address.
    size_t child_threads = 0;
    CrashLoop::Options crash_loop;
    uint64_t stop_timeout_ms = 30'000;
    // The metrics file is rewritten at every change and at this interval, so the nanny's
    // process_* figures (read when it is written) are at most this old in a scrape.
    uint64_t metrics_refresh_ms = 10'000;
    // Each line the child prints (they also go to the log); for tests.
    std::function<void(std::string_view line)> on_child_line;
    // Node-local mode (node_local_args.h): set with -localip. kubedns_server is then the
    // -upstreamsvc ClusterIP on port 53, which serves the cluster zones (cluster_domain,
    // the reverse zones and kubedns_zones).
    std::optional<NodeLocal::Options> node_local;
    std::string upstream_service;  // -upstreamsvc, for log lines
    // Runs the node-local mode's commands; nullptr: a ProcessRunner (tests pass a fake).
    CommandRunner* runner = nullptr;
    InterfaceReader interface_reader = &ReadInterface;
  };

  Nanny(loop::Loop& loop, Options options);
  ~Nanny();
  Nanny(const Nanny&) = delete;
  Nanny& operator=(const Nanny&) = delete;

  // Binds the sockets (in-place mode), reads the configuration and starts the child (after
  // resolving stub host names). False with a one-line *error on a start-up problem.
  [[nodiscard]] bool Start(std::string* error);
  // SIGTERM: stop applying changes, stop the child (its lameduck), then finish.
  void Shutdown();
  // SIGHUP: read the directory now.
  void SyncNow();

  // Runs once, when the nanny is done (child stopped after Shutdown, or a crash loop).
  void set_on_finished(std::function<void(int exit_code)> on_finished) {
    on_finished_ = std::move(on_finished);
  }
  bool finished() const { return exit_code_.has_value(); }
  int exit_code() const { return exit_code_.value_or(0); }

  const NannyMetrics& metrics() const { return metrics_; }
  // The version read last (applied or not).
  const std::string& seen_version() const { return seen_version_; }
  const ListenSockets& sockets() const { return sockets_; }
  const Supervisor& supervisor() const { return *supervisor_; }
  // Node-local mode only.
  const NodeLocal* node_local() const { return node_local_.get(); }
  std::string servers_file() const { return options_.run_dir + "/servers.conf"; }
  std::string metrics_file() const { return options_.run_dir + "/nanny.prom"; }

 private:
  void Sync(const char* why);
  void Prepare(RawConfig raw, const std::string& version);
  void Apply(const RawConfig& raw, const std::string& version);
  void StartChild(std::vector<std::string> generated);
  // Node-local mode: the interface before the sockets are bound, the rest after.
  bool StartNodeLocal(std::string* error);
  void RefreshHosts();
  void OnHostTick();
  // When to look the stub host names up next: soon (doubling) while one has no address.
  void ScheduleLookups();
  void WriteMetrics();
  void Finish(int exit_code);

  loop::Loop& loop_;
  Options options_;
  ListenSockets sockets_;
  std::unique_ptr<ProcessRunner> own_runner_;
  std::unique_ptr<NodeLocal> node_local_;
  std::unique_ptr<ares::Channel> cluster_resolver_;
  std::unique_ptr<ares::Channel> system_resolver_;
  std::unique_ptr<StubHosts> stub_hosts_;
  std::unique_ptr<Supervisor> supervisor_;
  std::unique_ptr<loop::FileWatcher> watcher_;
  std::unique_ptr<OrphanReaper> reaper_;
  loop::Timer host_timer_;
  loop::Timer log_timer_;
  loop::Timer metrics_timer_;
  NannyMetrics metrics_;
  // The nanny's own process_* and kdns_build_info, labelled program="nanny" (they join
  // frontend-cache's in one scrape: text_merge.h).
  metrics::Registry process_metrics_;

  std::string seen_version_;  // the newest version read (applied or rejected)
  bool seen_any_ = false;
  std::string last_read_error_;
  uint64_t candidate_seq_ = 0;
  // The configuration applied (what the child runs).
  RawConfig applied_raw_;
  std::string applied_version_;
  std::optional<ChildConfig> applied_child_;
  int lookups_in_flight_ = 0;  // StubHosts::Resolve batches not done yet
  uint64_t next_host_refresh_ms_ = 0;
  uint64_t host_retry_ms_ = 0;
  bool stopping_ = false;
  std::optional<int> exit_code_;
  std::function<void(int)> on_finished_;
};

}  // namespace kdns::nanny

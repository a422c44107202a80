#include "nanny/nanny.h"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <ctime>
#include <utility>

#include "common/base/cpu_quota.h"
#include "common/metrics/process_metrics.h"
#include "common/server/dns_server.h"
#include "nanny/atomic_file.h"

namespace kdns::nanny {
namespace {

// The longest wait before a stub host name with no address is looked up again (kubedns may
// take a while to sync at pod start; its names should not wait for the full refresh).
constexpr uint64_t kMaxLookupRetryMs = 10'000;

double UnixNowS() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out;
}

}  // namespace

Nanny::Nanny(loop::Loop& loop, Options options)
    : loop_(loop),
      options_(std::move(options)),
      host_timer_(loop),
      log_timer_(loop),
      metrics_timer_(loop) {
  host_retry_ms_ = options_.stub_retry_ms;
  metrics::RegisterProcessMetrics(process_metrics_, "nanny", metrics::ProcessSeries::kProgramLabel);
}

Nanny::~Nanny() = default;

bool Nanny::Start(std::string* error) {
  std::vector<std::string> argv = options_.child_argv;
  std::vector<int> fds;
  if (options_.node_local) {
    CommandRunner* runner = options_.runner;
    if (runner == nullptr) {
      own_runner_ = std::make_unique<ProcessRunner>();
      runner = own_runner_.get();
    }
    NodeLocal::Options node = *options_.node_local;
    node.ruleset_file = options_.run_dir + "/nodelocal.nft";
    node_local_ =
        std::make_unique<NodeLocal>(loop_, std::move(node), *runner, options_.interface_reader);
    node_local_->set_on_metrics_changed([this] { WriteMetrics(); });
    if (!node_local_->SetUpInterface(error)) return false;
  }
  if (options_.mode == ApplyMode::kInPlace) {
    // The child serves a SO_REUSEPORT pair per thread past two threads, as it would bind
    // them itself (DnsServer, "Sockets"): its default count is ours, from the same cgroup.
    const size_t threads =
        options_.child_threads != 0 ? options_.child_threads : DefaultThreads().threads;
    const size_t pairs = server::DnsServer::InheritedPairsFor(threads);
    if (!sockets_.Bind(options_.listen, error, node_local_ ? BindFor::kNodeLocal : BindFor::kPod,
                       pairs)) {
      if (node_local_) node_local_->Teardown();
      return false;
    }
    fds = sockets_.fds();
    std::string addresses;
    for (const auto& address : sockets_.addresses()) {
      addresses += (addresses.empty() ? "" : ", ") + address.ToString();
    }
    LOG(INFO) << "holding the DNS sockets on " << addresses << " ("
              << (pairs == 1 ? std::string("one UDP and TCP pair")
                             : std::to_string(pairs) + " SO_REUSEPORT pairs, one per thread")
              << " each; UDP receive buffer " << sockets_.udp_receive_buffer_bytes()
              << " bytes) for " << options_.child_name;
    argv.push_back("--servers-file=" + servers_file());
    argv.push_back("--metrics-textfile=" + metrics_file());
  }
  // The rules after the sockets: traffic they send our way finds a socket to wait in.
  if (node_local_ && !node_local_->Start(error)) {
    node_local_->Teardown();
    return false;
  }
  ares::Channel::Options cluster;
  cluster.servers = {options_.kubedns_server};
  cluster.timeout_ms = options_.lookup_timeout_ms;
  cluster.tries = 2;
  cluster_resolver_ = ares::Channel::Create(loop_, cluster, error);
  if (!cluster_resolver_) return false;
  ares::Channel::Options system;
  system.timeout_ms = options_.lookup_timeout_ms;
  system.tries = 2;
  system_resolver_ = ares::Channel::Create(loop_, system, error);
  if (!system_resolver_) return false;
  stub_hosts_ =
      std::make_unique<StubHosts>(*cluster_resolver_, *system_resolver_, options_.cluster_domain);

  Supervisor::Options supervise;
  supervise.name = options_.child_name;
  supervise.argv = std::move(argv);
  supervise.trampoline = options_.trampoline;
  supervise.listen_fds = fds;
  supervise.crash_loop = options_.crash_loop;
  supervise.stop_timeout_ms = options_.stop_timeout_ms;
  Supervisor::Callbacks callbacks;
  callbacks.on_give_up = [this] { Finish(1); };
  callbacks.on_stopped = [this](int64_t status, int signal) {
    Finish(status == 0 && (signal == 0 || signal == SIGTERM) ? 0 : 1);
  };
  callbacks.on_line = options_.on_child_line;
  callbacks.on_started = [this](bool) {
    metrics_.restarts_crash = supervisor_->crash_restarts();
    metrics_.restarts_config = supervisor_->config_restarts();
    WriteMetrics();
  };
  supervisor_ = std::make_unique<Supervisor>(loop_, std::move(supervise), std::move(callbacks));

  reaper_ = std::make_unique<OrphanReaper>(
      loop_, [this](pid_t pid) { return supervisor_ && supervisor_->pid() == pid; });
  if (reaper_->Start()) LOG(INFO) << "reaping orphaned processes (PID 1 or a subreaper)";

  // The metrics file exists before the child's first scrape.
  WriteMetrics();
  loop::FileWatcher::Options watch;
  watch.dir = options_.config_dir;
  watch.poll_interval_ms = options_.sync_interval_ms;
  watch.debounce_ms = options_.debounce_ms;
  watcher_ =
      std::make_unique<loop::FileWatcher>(loop_, watch, [this](loop::FileWatcher::Trigger trigger) {
        Sync(trigger == loop::FileWatcher::Trigger::kInotify ? "inotify" : "poll");
      });
  watcher_->Start();
  host_timer_.StartRepeating(
      std::max<uint64_t>(std::min<uint64_t>(options_.stub_retry_ms, 1000) / 2, 50),
      [this] { OnHostTick(); });
  if (options_.log_interval_ms > 0) {
    log_timer_.StartRepeating(options_.log_interval_ms,
                              [this] { supervisor_->SendWhenSafe(SIGUSR1); });
  }
  if (options_.metrics_refresh_ms > 0) {
    metrics_timer_.StartRepeating(options_.metrics_refresh_ms, [this] { WriteMetrics(); });
  }
  Sync("start");
  return true;
}

void Nanny::SyncNow() { Sync("SIGHUP"); }

void Nanny::Sync(const char* why) {
  if (stopping_) return;
  config::ConfigDirData data;
  std::string error;
  if (!config::ReadConfigDir(options_.config_dir, &data, &error)) {
    ++metrics_.config_read_errors;
    if (error != last_read_error_) {
      LOG(WARNING) << "cannot read the configuration (" << why << "): " << error
                   << (supervisor_->state() == Supervisor::State::kIdle
                           ? "; starting with the default configuration"
                           : "; keeping the running configuration");
      last_read_error_ = error;
    }
    WriteMetrics();
    if (supervisor_->state() != Supervisor::State::kIdle || candidate_seq_ > 0) return;
    data = config::ConfigDirData{};  // the default: as kube-dns, no stub domains, no upstreams
  } else {
    last_read_error_.clear();
  }
  const std::string version = ConfigVersion(data);
  if (seen_any_ && version == seen_version_) return;
  seen_any_ = true;
  seen_version_ = version;

  config::KubeDnsConfig parsed;
  RawConfig raw;
  if (!config::ParseKubeDnsConfig(data, &parsed, &error) || !ExtractRawConfig(data, &raw, &error)) {
    ++metrics_.config_updates_rejected;
    metrics_.config_error = true;
    const bool first = candidate_seq_ == 0;
    LOG(ERROR) << "configuration version " << version << " rejected (" << why << "): " << error
               << (first ? "; starting with the default configuration"
                         : "; keeping version " + applied_version_);
    WriteMetrics();
    if (first) Prepare(RawConfig{}, ConfigVersion(config::ConfigDirData{}));
    return;
  }
  metrics_.config_error = false;
  if (access((options_.config_dir + "/federations").c_str(), F_OK) == 0) {
    LOG(WARNING) << "configuration key \"federations\" ignored (Kubernetes federation v1 is "
                    "gone)";
  }
  LOG(INFO) << "configuration version " << version << " (" << why << "): " << parsed.ToString();
  Prepare(std::move(raw), version);
}

void Nanny::Prepare(RawConfig raw, const std::string& version) {
  const uint64_t seq = ++candidate_seq_;
  std::vector<std::string> names = HostNames(raw);
  if (stub_hosts_->Known(names)) {
    Apply(raw, version);  // with the last known addresses; the next refresh checks them
    return;
  }
  // A name never resolved: look it up before applying (bounded by the lookup timeout), so
  // a stub domain is not routed without its server in the meantime.
  ++lookups_in_flight_;
  stub_hosts_->Resolve(names, [this, seq, raw = std::move(raw), version](bool) {
    --lookups_in_flight_;
    if (seq != candidate_seq_ || stopping_) return;  // superseded by a newer version
    Apply(raw, version);
    ScheduleLookups();
  });
}

void Nanny::Apply(const RawConfig& raw, const std::string& version) {
  ChildConfig child = Translate(raw, stub_hosts_->addresses());
  // The runtime switches reach frontend-cache through its servers file; another child
  // (restart mode) has no such file, and restarting it for a log switch would cost more than
  // the switch is worth.
  // So do kdns.routeOptions (a restarted child may be dnsmasq, which has no such option).
  if (options_.mode == ApplyMode::kRestart) {
    child.switches = {};
    child.route_options.clear();
  }
  if (options_.node_local) {
    AddClusterZones(ClusterZones(options_.cluster_domain, options_.kubedns_zones),
                    loop::IpOf(options_.kubedns_server), &child);
  } else {
    AddKubednsZones(options_.kubedns_zones, options_.kubedns_server.ToString(), &child);
  }
  metrics_.stub_hosts_unresolved = child.unresolved.size();
  metrics_.stub_lookups_ok = stub_hosts_->lookups_ok();
  metrics_.stub_lookups_failed = stub_hosts_->lookups_failed();
  if (!child.unresolved.empty()) {
    LOG(WARNING) << "stub servers without an address, left out until they resolve: "
                 << Join(child.unresolved);
  }
  const bool changed = !applied_child_ || *applied_child_ != child;
  const bool idle = supervisor_->state() == Supervisor::State::kIdle;
  bool applied = false;
  if (options_.mode == ApplyMode::kInPlace) {
    if (changed || idle) {
      std::string error;
      if (!WriteFileAtomically(servers_file(), ToServersFile(child, version), &error)) {
        // Our own directory: nothing from outside; keep the running routing.
        LOG(ERROR) << "cannot write the servers file: " << error;
        WriteMetrics();
        return;
      }
    }
    if (idle) {
      StartChild({});
      applied = true;
    } else if (changed) {
      supervisor_->Reload();
      ++metrics_.reloads;
      applied = true;
      LOG(INFO) << "configuration version " << version << " handed to " << options_.child_name
                << " in place (SIGHUP): " << Join(ToArguments(child));
    }
  } else {
    std::vector<std::string> args = ToArguments(child);
    if (idle) {
      StartChild(args);
      applied = true;
    } else if (changed && options_.restart_on_change) {
      LOG(INFO) << "restarting " << options_.child_name << " for configuration version " << version
                << ": " << Join(args);
      supervisor_->Restart(args);
      applied = true;
    } else if (changed) {
      LOG(INFO) << "configuration version " << version << " not applied: " << options_.child_name
                << " is not restarted (-restartDnsmasq=false)";
    }
  }
  if (applied || !changed) applied_raw_ = raw;  // what the child runs
  if (applied) {
    applied_child_ = child;
    applied_version_ = version;
    ++metrics_.config_generation;
    metrics_.config_version = version;
    metrics_.config_last_applied_unix_s = UnixNowS();
  } else if (!changed) {
    // Same routing (e.g. only white space changed): the values of this version run.
    applied_version_ = version;
    metrics_.config_version = version;
  }
  WriteMetrics();
}

void Nanny::StartChild(std::vector<std::string> generated) {
  std::string error;
  if (!supervisor_->Start(std::move(generated), &error)) {
    LOG(ERROR) << "cannot start " << options_.child_name << ": " << error;
    Finish(1);
  }
}

void Nanny::OnHostTick() {
  if (stopping_ || lookups_in_flight_ > 0 || loop_.now_ms() < next_host_refresh_ms_) return;
  RefreshHosts();
}

void Nanny::ScheduleLookups() {
  const uint64_t now = loop_.now_ms();
  if (metrics_.stub_hosts_unresolved > 0) {
    next_host_refresh_ms_ = now + host_retry_ms_;
    host_retry_ms_ = std::min({host_retry_ms_ * 2, options_.stub_refresh_ms, kMaxLookupRetryMs});
  } else {
    host_retry_ms_ = options_.stub_retry_ms;
    next_host_refresh_ms_ = now + options_.stub_refresh_ms;
  }
}

void Nanny::RefreshHosts() {
  std::vector<std::string> names = HostNames(applied_raw_);
  if (names.empty()) return;
  ++lookups_in_flight_;
  const uint64_t seq = candidate_seq_;
  stub_hosts_->Resolve(names, [this, seq](bool changed) {
    --lookups_in_flight_;
    metrics_.stub_lookups_ok = stub_hosts_->lookups_ok();
    metrics_.stub_lookups_failed = stub_hosts_->lookups_failed();
    if (stopping_) return;
    if (changed && seq == candidate_seq_) {
      LOG(INFO) << "stub server addresses changed: applying again";
      Apply(applied_raw_, applied_version_);
    } else {
      WriteMetrics();
    }
    ScheduleLookups();
  });
}

void Nanny::WriteMetrics() {
  if (options_.run_dir.empty()) return;
  if (supervisor_) {
    metrics_.restarts_crash = supervisor_->crash_restarts();
    metrics_.restarts_config = supervisor_->config_restarts();
  }
  std::string error;
  std::string text = metrics_.Render();
  if (node_local_) text += node_local_->metrics().Render();
  if (!WriteFileAtomically(metrics_file(), text + process_metrics_.Render(), &error)) {
    LOG_EVERY_N(ERROR, 100) << "cannot write the metrics file: " << error;
  }
}

void Nanny::Shutdown() {
  // The rules go before the child stops: clients of the ClusterIP reach the central DNS
  // again (kube-proxy) while the child still answers what was sent to us; the addresses go
  // once it exited (Finish), so what it answers late still leaves from them.
  if (node_local_ && !stopping_ && node_local_->StopRouting()) {
    // Another node cache serves the node (an update): new queries all go to its sockets.
    const ListenSockets::Left left = sockets_.LeaveReusePortGroup();
    LOG(INFO) << left.udp << " UDP sockets and " << left.tcp
              << " TCP listeners left to the other node cache; the rest of the queue drains";
  }
  if (stopping_) {
    LOG(INFO) << "second stop request: asking " << options_.child_name << " to exit now";
  } else {
    LOG(INFO) << "stopping: " << options_.child_name << " gets SIGTERM (its lameduck period)";
  }
  stopping_ = true;
  if (watcher_) watcher_->Stop();
  host_timer_.Stop();
  log_timer_.Stop();
  metrics_timer_.Stop();
  if (supervisor_) {
    supervisor_->Stop();
  } else {
    Finish(0);
  }
}

void Nanny::Finish(int exit_code) {
  if (exit_code_) return;
  exit_code_ = exit_code;
  stopping_ = true;
  // After the child exited (or gave up crash-looping: no black hole either).
  if (node_local_) node_local_->Teardown();
  if (watcher_) watcher_->Stop();
  if (reaper_) reaper_->Stop();
  host_timer_.Stop();
  log_timer_.Stop();
  metrics_timer_.Stop();
  WriteMetrics();
  if (on_finished_) on_finished_(exit_code);
}

}  // namespace kdns::nanny

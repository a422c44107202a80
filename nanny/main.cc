// nanny: Supervises frontend-cache and applies the kube-dns ConfigMap (kube-dns's
// dnsmasq-nanny, with its flags: -configDir, -syncInterval, -restartDnsmasq, -dnsmasqExec,
// -kubednsServer, -logInterval; everything after "--" goes to the child first). With
// node-cache's -localip (and its other flags) it runs as the per-node cache (node_local.h).
// Flags and wiring only (args.h checks the flags); the program's behaviour lives in Nanny,
// which tests drive.
//
// Signals: SIGTERM/SIGINT (in node-local mode after removing the rules; the addresses go
// once the child exited) stop the child (its lameduck period) and exit when it exited; a
// second one makes the child exit at once. SIGHUP reads the configuration directory now.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/app/program.h"
#include "common/base/ip_address.h"
#include "common/base/version.h"
#include "common/config/kube_dns_config.h"
#include "common/loop/loop.h"
#include "common/loop/signal.h"
#include "common/loop/socket_address.h"
#include "nanny/args.h"
#include "nanny/exec_trampoline.h"
#include "nanny/nanny.h"
#include "nanny/node_local_args.h"
#include "nanny/translate.h"

// kube-dns's dnsmasq-nanny flags (Go durations are strings here).
DEFINE_string(configDir, "/etc/k8s/dns/dnsmasq-nanny",
              "location of the configuration (the kube-dns ConfigMap mounted as a directory)");
DEFINE_string(syncInterval, "10s",
              "interval to check for configuration updates (a safety net: inotify reacts at "
              "once)");
DEFINE_bool(restartDnsmasq, false,
            "if true, restart the child when the configuration changes (restart mode only; "
            "frontend-cache is always updated in place, without a restart)");
DEFINE_string(dnsmasqExec, "frontend-cache",
              "the child executable: frontend-cache (looked up beside the nanny, then in PATH) "
              "or a dnsmasq binary such as /usr/sbin/dnsmasq");
DEFINE_string(kubednsServer, "127.0.0.1:10053",
              "local kubedns instance address for resolving stub servers under the cluster "
              "domain");
DEFINE_string(logInterval, "0",
              "interval to send SIGUSR1 to the child, which logs its statistics (0: never)");
// Ours.
DEFINE_string(childMode, "auto",
              "how configuration changes reach the child: in-place (frontend-cache: the "
              "nanny holds the DNS sockets, a servers file and SIGHUP), restart (any dnsmasq: "
              "--server arguments and a restart), or auto (in-place when -dnsmasqExec is "
              "frontend-cache)");
DEFINE_string(runDir, "",
              "directory for the servers file and the metrics file handed to frontend-cache "
              "(default: a new directory under $TMPDIR or /tmp, removed at exit)");
DEFINE_string(clusterDomain, "cluster.local",
              "stub servers named under this domain are resolved through -kubednsServer");
DEFINE_string(kubednsZones, "",
              "more zones kubedns serves, comma-separated (the multicluster zones: "
              "clusterset.local,slice.local); each is routed to -kubednsServer in the child's "
              "generated servers, as the cluster zone is");
DEFINE_string(stubResolveInterval, "60s",
              "how often stub servers given as host names are looked up again");
DEFINE_int32(crashLoopRestarts, 5,
             "give up (exit 1) after this many crashes in a row, each within "
             "-crashLoopRuntime of its start");
DEFINE_string(crashLoopRuntime, "10s",
              "a child that ran for less than this before it died crashed fast");
DEFINE_string(childStopTimeout, "30s",
              "how long a child may take to exit after SIGTERM before it gets SIGKILL");
// node-cache's flags (node-local mode, node_local_args.h): -localip turns it on.
DEFINE_string(localip, "",
              "node-local mode: comma-separated IPv4/IPv6 addresses to serve DNS on (the "
              "link-local address, e.g. 169.254.20.10, and optionally the kube-dns ClusterIP)");
DEFINE_string(upstreamsvc, "kube-dns-upstream",
              "node-local mode: the Service whose ClusterIP (<NAME>_SERVICE_HOST) serves the "
              "cluster zones");
DEFINE_bool(setupinterface, true,
            "node-local mode: put the -localip addresses on -interfacename (a dummy link, "
            "created when missing)");
DEFINE_bool(setupiptables, true,
            "node-local mode: install the NOTRACK and ACCEPT rules for the -localip addresses");
DEFINE_string(interfacename, "nodelocaldns", "node-local mode: the interface of the addresses");
DEFINE_bool(skipteardown, false, "node-local mode: leave the rules and addresses in place at exit");
DEFINE_int32(health_port, 8080,
             "node-local mode: serve GET /health on this port of every -localip address");
DEFINE_string(syncinterval, "60s",
              "node-local mode: how often the addresses and rules are checked and repaired");
DEFINE_string(kubednscm, "/etc/kube-dns",
              "node-local mode: the mounted kube-dns ConfigMap directory (-configDir's role)");
DEFINE_string(metrics_listen_address, "0.0.0.0:9253",
              "node-local mode: address of the node cache's /metrics (frontend-cache's and "
              "the nanny's)");
DEFINE_string(firewall, "auto", "node-local mode: the rules' backend: auto, nftables or iptables");
DEFINE_string(conf, "", "node-cache's Corefile: no meaning here (a warning)");
DEFINE_string(basecorefile, "", "node-cache's Corefile template: no meaning here (a warning)");
DEFINE_bool(check_flags, false,
            "validate the flags, and frontend-cache's arguments after -- with its own "
            "--check-flags, then exit with the result (for manifest checks); starts nothing");

namespace {

// Runs `program args... --check-flags` and returns its exit status (2 if it cannot run).
int RunCheckFlags(const std::string& program, const std::vector<std::string>& args) {
  std::vector<char*> argv = {const_cast<char*>(program.c_str())};
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  static char check[] = "--check-flags";
  argv.push_back(check);
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

using kdns::app::Fail;

// The kube-dns ConfigMap in `dir`, read and validated as Nanny::Sync does.
bool CheckConfigDir(const std::string& dir, std::string* error) {
  kdns::config::ConfigDirData data;
  kdns::config::KubeDnsConfig parsed;
  kdns::nanny::RawConfig raw;
  if (!kdns::config::ReadConfigDir(dir, &data, error) ||
      !kdns::config::ParseKubeDnsConfig(data, &parsed, error) ||
      !kdns::nanny::ExtractRawConfig(data, &raw, error)) {
    *error = "-configDir=" + dir + ": " + *error;
    return false;
  }
  return true;
}

std::string MakeRunDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kdns-nanny.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) Fail("cannot create a run directory " + pattern);
  return buffer.data();
}

}  // namespace

int main(int argc, char** argv) {
  if (kdns::nanny::IsExecTrampoline(argc, argv)) {
    return kdns::nanny::RunExecTrampoline(argc, argv);
  }
  kdns::app::SetProgram({"nanny",
                         "Supervises frontend-cache (or dnsmasq) and applies the kube-dns "
                         "ConfigMap.\nUsage: nanny [flags] -- [child arguments]"});
  kdns::nanny::SplitArgs split = kdns::nanny::SplitAtDoubleDash(argc, argv);
  kdns::app::ParseFlags(std::move(split.own));

  const auto self = kdns::nanny::SelfExecutable();
  if (!self) Fail("cannot read /proc/self/exe");
  kdns::nanny::FlagValues flags;
  flags.config_dir = FLAGS_configDir;
  flags.sync_interval = FLAGS_syncInterval;
  flags.restart_dnsmasq = FLAGS_restartDnsmasq;
  flags.dnsmasq_exec = FLAGS_dnsmasqExec;
  flags.kubedns_server = FLAGS_kubednsServer;
  flags.log_interval = FLAGS_logInterval;
  flags.child_mode = FLAGS_childMode;
  flags.cluster_domain = FLAGS_clusterDomain;
  flags.kubedns_zones = FLAGS_kubednsZones;
  flags.stub_resolve_interval = FLAGS_stubResolveInterval;
  flags.crash_loop_restarts = FLAGS_crashLoopRestarts;
  flags.crash_loop_runtime = FLAGS_crashLoopRuntime;
  flags.child_stop_timeout = FLAGS_childStopTimeout;
  const kdns::nanny::ExecutableSearch search{*self, kdns::nanny::SearchPath()};
  kdns::nanny::Nanny::Options options;
  std::string error;
  if (!kdns::nanny::BuildOptions(flags, split.child, search, &options, &error)) Fail(error);
  kdns::nanny::NodeLocalFlags node_flags;
  node_flags.localip = FLAGS_localip;
  node_flags.upstreamsvc = FLAGS_upstreamsvc;
  node_flags.setupinterface = FLAGS_setupinterface;
  node_flags.setupiptables = FLAGS_setupiptables;
  node_flags.interfacename = FLAGS_interfacename;
  node_flags.skipteardown = FLAGS_skipteardown;
  node_flags.health_port = FLAGS_health_port;
  node_flags.syncinterval = FLAGS_syncinterval;
  node_flags.kubednscm = FLAGS_kubednscm;
  node_flags.metrics_listen_address = FLAGS_metrics_listen_address;
  node_flags.firewall = FLAGS_firewall;
  const bool node_local = kdns::nanny::NodeLocalMode(node_flags);
  if (node_local &&
      !kdns::nanny::BuildNodeLocalOptions(node_flags, split.child, &options, &error)) {
    Fail(error);
  }
  const std::string& exec = options.child_argv.front();
  if (FLAGS_check_flags) {
    // A config directory that exists here is checked too, as a ConfigMap update would be
    // (a pre-flight of a ConfigMap written by hand or by tools/corefile2kdns); one that does
    // not (the pod's mount path, on another machine) is the pod's to have.
    if (std::string config_error; std::filesystem::is_directory(options.config_dir) &&
                                  !CheckConfigDir(options.config_dir, &config_error)) {
      Fail(config_error);
    }
    // Only our own child has a check mode; another (dnsmasq) is checked when it starts.
    if (options.mode != kdns::nanny::ApplyMode::kInPlace) return 0;
    return RunCheckFlags(exec, split.child);
  }
  kdns::app::InitProcess(argv[0]);
  std::vector<std::string> meaningless;
  for (const char* name : {"conf", "basecorefile"}) {
    if (!gflags::GetCommandLineFlagInfoOrDie(name).is_default) meaningless.push_back(name);
  }
  if (!meaningless.empty()) LOG(WARNING) << kdns::nanny::IgnoredFlagsWarning(meaningless);
  if (node_local) {
    // The environment is the pod's (not a flag): checked when running, not by --check-flags.
    kdns::IpAddress upstream;
    if (!kdns::nanny::ServiceClusterIp(
            options.upstream_service, [](const char* name) { return std::getenv(name); }, &upstream,
            &error)) {
      Fail(error);
    }
    options.kubedns_server = kdns::loop::SocketAddressOf(upstream, 53);
  }
  const bool own_run_dir = FLAGS_runDir.empty();
  options.run_dir = own_run_dir ? MakeRunDir() : FLAGS_runDir;
  if (!own_run_dir) {
    std::error_code made;
    std::filesystem::create_directories(options.run_dir, made);
    if (made) Fail("-runDir " + options.run_dir + ": cannot create it: " + made.message());
  }

  int exit_code = 0;
  {
    kdns::loop::Loop loop;
    kdns::nanny::Nanny nanny(loop, options);
    kdns::loop::Signal term(loop);
    kdns::loop::Signal interrupt(loop);
    kdns::loop::Signal hangup(loop);
    term.Start(SIGTERM, [&nanny](int) { nanny.Shutdown(); });
    interrupt.Start(SIGINT, [&nanny](int) { nanny.Shutdown(); });
    hangup.Start(SIGHUP, [&nanny](int) { nanny.SyncNow(); });
    nanny.set_on_finished([&loop](int) { loop.Stop(); });
    LOG(INFO) << "nanny " << kdns::kVersion << ": child " << exec << " ("
              << (options.mode == kdns::nanny::ApplyMode::kInPlace ? "in-place" : "restart")
              << " mode), configuration " << options.config_dir << ", run directory "
              << options.run_dir;
    if (node_local) {
      LOG(INFO) << "node-local mode on " << FLAGS_localip << ": cluster zones to -upstreamsvc "
                << options.upstream_service << " at " << options.kubedns_server.ToString();
    }
    if (!nanny.Start(&error)) Fail(error);
    if (!nanny.finished()) loop.Run();
    exit_code = nanny.exit_code();
    term.Stop();
    interrupt.Stop();
    hangup.Stop();
  }
  if (own_run_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(options.run_dir, ignored);
  }
  LOG(INFO) << "nanny exiting with status " << exit_code;
  return exit_code;
}

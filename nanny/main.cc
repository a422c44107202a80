// nanny: Supervises frontend-cache and applies the kube-dns ConfigMap (kube-dns's
// dnsmasq-nanny, with its flags: -configDir, -syncInterval, -restartDnsmasq, -dnsmasqExec,
// -kubednsServer, -logInterval; everything after "--" goes to the child first).
// Flags and wiring only (args.h checks the flags); the program's behaviour lives in Nanny,
// which tests drive.
//
// Signals: SIGTERM/SIGINT stop the child (its lameduck period) and exit when it exited; a
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
#include "common/base/version.h"
#include "common/loop/loop.h"
#include "common/loop/signal.h"
#include "nanny/args.h"
#include "nanny/exec_trampoline.h"
#include "nanny/nanny.h"

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
  const char* path = std::getenv("PATH");
  const kdns::nanny::ExecutableSearch search{
      *self, path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"};
  kdns::nanny::Nanny::Options options;
  std::string error;
  if (!kdns::nanny::BuildOptions(flags, split.child, search, &options, &error)) Fail(error);
  const std::string& exec = options.child_argv.front();
  if (FLAGS_check_flags) {
    // Only our own child has a check mode; another (dnsmasq) is checked when it starts.
    if (options.mode != kdns::nanny::ApplyMode::kInPlace) return 0;
    return RunCheckFlags(exec, split.child);
  }
  kdns::app::InitProcess(argv[0]);
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

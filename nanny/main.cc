// nanny: Supervises frontend-cache and applies the kube-dns ConfigMap (kube-dns's
// dnsmasq-nanny, with its flags: -configDir, -syncInterval, -restartDnsmasq, -dnsmasqExec,
// -kubednsServer, -logInterval; everything after "--" goes to the child first).
// Flags and wiring only; the program's behaviour lives in Nanny, which tests drive.
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
#include <iostream>
#include <string>
#include <vector>

#include "common/base/duration.h"
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

[[noreturn]] void Fail(const std::string& message) {
  std::cerr << "nanny: " << message << "\n";
  std::exit(2);
}

uint64_t DurationFlag(const char* name, const std::string& value) {
  auto ms = kdns::ParseDurationMs(value);
  if (!ms) Fail(std::string("-") + name + ": not a duration: \"" + value + "\"");
  return *ms;
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// -dnsmasqExec as a path: kept when it has a '/', else beside the nanny, else in PATH.
std::string FindExecutable(const std::string& exec, const std::string& self) {
  if (exec.find('/') != std::string::npos) {
    if (!Executable(exec)) Fail("-dnsmasqExec " + exec + ": not an executable file");
    return exec;
  }
  std::string beside = std::filesystem::path(self).parent_path() / exec;
  if (Executable(beside)) return beside;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir =
        dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + exec;
    if (Executable(candidate)) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  Fail("-dnsmasqExec " + exec + ": not found beside the nanny nor in PATH");
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
  kdns::nanny::SplitArgs split = kdns::nanny::SplitAtDoubleDash(argc, argv);
  std::vector<char*> own;
  for (auto& arg : split.own) own.push_back(arg.data());
  int own_argc = static_cast<int>(own.size());
  char** own_argv = own.data();
  gflags::SetVersionString(kdns::kVersion);
  gflags::SetUsageMessage(
      "Supervises frontend-cache (or dnsmasq) and applies the kube-dns ConfigMap.\n"
      "Usage: nanny [flags] -- [child arguments]");
  FLAGS_logtostderr = true;  // a container logs to stderr
  gflags::ParseCommandLineFlags(&own_argc, &own_argv, true);
  if (own_argc > 1) Fail(std::string("unknown argument: ") + own_argv[1]);
  google::InitGoogleLogging(argv[0]);
  google::InstallFailureSignalHandler();

  const auto self = kdns::nanny::SelfExecutable();
  if (!self) Fail("cannot read /proc/self/exe");
  kdns::nanny::Nanny::Options options;
  options.config_dir = FLAGS_configDir;
  options.sync_interval_ms = DurationFlag("syncInterval", FLAGS_syncInterval);
  if (options.sync_interval_ms == 0) Fail("-syncInterval: must be more than 0");
  options.restart_on_change = FLAGS_restartDnsmasq;
  options.log_interval_ms = DurationFlag("logInterval", FLAGS_logInterval);
  options.stub_refresh_ms = DurationFlag("stubResolveInterval", FLAGS_stubResolveInterval);
  if (options.stub_refresh_ms == 0) Fail("-stubResolveInterval: must be more than 0");
  options.stub_retry_ms = std::min<uint64_t>(options.stub_retry_ms, options.stub_refresh_ms);
  options.crash_loop.max_fast_crashes = FLAGS_crashLoopRestarts;
  if (options.crash_loop.max_fast_crashes < 1) Fail("-crashLoopRestarts: must be at least 1");
  options.crash_loop.healthy_runtime_ms = DurationFlag("crashLoopRuntime", FLAGS_crashLoopRuntime);
  options.stop_timeout_ms = DurationFlag("childStopTimeout", FLAGS_childStopTimeout);
  options.cluster_domain = FLAGS_clusterDomain;
  auto kubedns = kdns::loop::SocketAddress::Parse(FLAGS_kubednsServer);
  if (!kubedns) {
    kubedns = kdns::loop::SocketAddress::FromHostPort(FLAGS_kubednsServer, 53);
  }
  if (!kubedns) Fail("-kubednsServer: not an address: \"" + FLAGS_kubednsServer + "\"");
  options.kubedns_server = *kubedns;

  const std::string exec = FindExecutable(FLAGS_dnsmasqExec, *self);
  options.child_name = std::filesystem::path(exec).filename();
  options.child_argv = {exec};
  options.child_argv.insert(options.child_argv.end(), split.child.begin(), split.child.end());
  options.trampoline = *self;
  if (FLAGS_childMode == "in-place" ||
      (FLAGS_childMode == "auto" && options.child_name == "frontend-cache")) {
    options.mode = kdns::nanny::ApplyMode::kInPlace;
  } else if (FLAGS_childMode == "restart" || FLAGS_childMode == "auto") {
    options.mode = kdns::nanny::ApplyMode::kRestart;
  } else {
    Fail("-childMode: auto, in-place or restart, not \"" + FLAGS_childMode + "\"");
  }
  std::string error;
  if (options.mode == kdns::nanny::ApplyMode::kInPlace) {
    if (kdns::nanny::HasLongOption(split.child, "servers-file")) {
      Fail("--servers-file after \"--\": the nanny writes the child's servers file itself");
    }
    kdns::nanny::ListenSpec listen;
    if (!kdns::nanny::ParseListenSpec(split.child, &listen, &error)) Fail(error);
    options.listen = listen.addresses;
  }
  if (FLAGS_check_flags) {
    // Only our own child has a check mode; another (dnsmasq) is checked when it starts.
    if (options.mode != kdns::nanny::ApplyMode::kInPlace) return 0;
    return RunCheckFlags(exec, std::vector<std::string>(split.child.begin(), split.child.end()));
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
    std::signal(SIGPIPE, SIG_IGN);
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

#include "nanny/supervisor.h"

#include <glog/logging.h>

#include <csignal>
#include <cstring>
#include <utility>

#include "nanny/exec_trampoline.h"

namespace kdns::nanny {

const char* StateName(Supervisor::State state) {
  switch (state) {
    case Supervisor::State::kIdle:
      return "idle";
    case Supervisor::State::kRunning:
      return "running";
    case Supervisor::State::kRestarting:
      return "restarting";
    case Supervisor::State::kBackoff:
      return "backoff";
    case Supervisor::State::kStopping:
      return "stopping";
    case Supervisor::State::kStopped:
      return "stopped";
    case Supervisor::State::kGaveUp:
      return "gave up";
  }
  return "?";
}

Supervisor::Supervisor(loop::Loop& loop, Options options, Callbacks callbacks, const Clock& clock)
    : loop_(loop),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      crash_loop_(options_.crash_loop),
      signal_timer_(loop),
      backoff_timer_(loop),
      kill_timer_(loop),
      retire_timer_(loop),
      stopped_timer_(loop) {}

Supervisor::~Supervisor() {
  if (child_ && !child_->exited()) {
    LOG(WARNING) << options_.name << "[" << child_->pid() << "] still running: killing it";
    child_->Kill(SIGKILL);
  }
}

pid_t Supervisor::pid() const { return child_ ? child_->pid() : 0; }

bool Supervisor::Start(std::vector<std::string> generated, std::string* error) {
  CHECK(state_ == State::kIdle) << "Start() twice";
  generated_ = std::move(generated);
  if (!Spawn(error)) return false;
  state_ = State::kRunning;
  if (callbacks_.on_started) callbacks_.on_started(false);
  return true;
}

bool Supervisor::Spawn(std::string* error) {
  std::vector<std::string> argv = options_.argv;
  argv.insert(argv.end(), generated_.begin(), generated_.end());
  loop::ChildProcess::Options spawn;
  spawn.argv = options_.trampoline.empty() ? argv : TrampolineArgv(options_.trampoline, argv);
  spawn.extra_fds = options_.listen_fds;
  if (!options_.listen_fds.empty()) {
    // LISTEN_PID is set by the trampoline, which knows the pid.
    spawn.env_additions = {"LISTEN_FDS=" + std::to_string(options_.listen_fds.size()),
                           "LISTEN_PID=0"};
  }
  auto pid = std::make_shared<pid_t>(0);
  const std::string name = options_.name;
  auto on_line = [this, pid, name](loop::ChildProcess::Stream, std::string_view line) {
    LOG(INFO) << name << "[" << *pid << "]: " << line;
    if (callbacks_.on_line) callbacks_.on_line(line);
  };
  auto on_exit = [this](int64_t status, int signal) { OnExit(status, signal); };
  child_ = loop::ChildProcess::Spawn(loop_, spawn, on_line, on_exit, error);
  if (!child_) return false;
  *pid = child_->pid();
  started_ms_ = clock_.NowMs();
  std::string text;
  for (const auto& arg : argv) text += (text.empty() ? "" : " ") + arg;
  LOG(INFO) << "started " << options_.name << "[" << *pid << "]: " << text
            << (options_.listen_fds.empty()
                    ? std::string()
                    : " (with " + std::to_string(options_.listen_fds.size()) +
                          " listening sockets)");
  return true;
}

void Supervisor::Retire() {
  if (!child_) return;
  retired_.push_back(std::move(child_));
  retire_timer_.Start(0, [this] { retired_.clear(); });
}

void Supervisor::OnExit(int64_t status, int signal) {
  const pid_t old_pid = child_ ? child_->pid() : 0;
  const uint64_t ran_ms = clock_.NowMs() - started_ms_;
  Retire();
  pending_signals_.clear();
  signal_timer_.Stop();
  kill_timer_.Stop();
  std::string how = signal != 0 ? std::string("killed by signal ") + strsignal(signal)
                                : "exit status " + std::to_string(status);
  switch (state_) {
    case State::kStopping:
      state_ = State::kStopped;
      LOG(INFO) << options_.name << "[" << old_pid << "] stopped: " << how;
      if (callbacks_.on_stopped) callbacks_.on_stopped(status, signal);
      return;
    case State::kRestarting:
      LOG(INFO) << options_.name << "[" << old_pid << "] exited for the restart (" << how
                << "); starting the new one";
      ++config_restarts_;
      SpawnOrGiveUp(false);
      return;
    case State::kRunning: {
      CrashLoop::Decision decision = crash_loop_.OnUnexpectedExit(started_ms_, clock_.NowMs());
      LOG(ERROR) << options_.name << "[" << old_pid << "] exited unasked after " << ran_ms
                 << " ms: " << how << " (fast crashes in a row: " << decision.fast_crashes << ")";
      if (decision.give_up) {
        state_ = State::kGaveUp;
        LOG(ERROR) << options_.name << " crashed " << decision.fast_crashes
                   << " times in a row within " << crash_loop_.options().healthy_runtime_ms
                   << " ms of its start: giving up";
        if (callbacks_.on_give_up) callbacks_.on_give_up();
        return;
      }
      ++crash_restarts_;
      if (decision.delay_ms == 0) {
        SpawnOrGiveUp(true);
      } else {
        LOG(WARNING) << "restarting " << options_.name << " in " << decision.delay_ms << " ms";
        state_ = State::kBackoff;
        backoff_timer_.Start(decision.delay_ms, [this] { SpawnOrGiveUp(true); });
      }
      return;
    }
    default:
      LOG(ERROR) << options_.name << "[" << old_pid << "] exited in state " << StateName(state_)
                 << ": " << how;
      return;
  }
}

void Supervisor::SpawnOrGiveUp(bool after_crash) {
  std::string error;
  if (!Spawn(&error)) {
    // No process could be made (fork failed): as hopeless as a crash loop.
    LOG(ERROR) << options_.name << ": " << error << ": giving up";
    state_ = State::kGaveUp;
    if (callbacks_.on_give_up) callbacks_.on_give_up();
    return;
  }
  state_ = State::kRunning;
  if (callbacks_.on_started) callbacks_.on_started(after_crash);
}

void Supervisor::Reload() { SendWhenSafe(SIGHUP); }

void Supervisor::SendWhenSafe(int signum) {
  if (state_ != State::kRunning || !child_) return;
  for (int pending : pending_signals_) {
    if (pending == signum) return;  // one is enough: the child reads the newest state
  }
  pending_signals_.push_back(signum);
  PollSignals();
}

void Supervisor::PollSignals() {
  if (state_ != State::kRunning || !child_ || child_->exited()) {
    pending_signals_.clear();
  }
  std::vector<int> still;
  for (int signum : pending_signals_) {
    if (SignalIsSafe(child_->pid(), signum)) {
      if (!child_->Kill(signum)) {
        LOG(WARNING) << options_.name << "[" << child_->pid() << "]: cannot send "
                     << strsignal(signum);
      }
    } else {
      still.push_back(signum);
    }
  }
  pending_signals_ = std::move(still);
  if (pending_signals_.empty()) {
    signal_timer_.Stop();
  } else if (!signal_timer_.IsActive()) {
    signal_timer_.StartRepeating(options_.signal_poll_ms, [this] { PollSignals(); });
  }
}

void Supervisor::Restart(std::vector<std::string> generated) {
  generated_ = std::move(generated);
  switch (state_) {
    case State::kRunning:
      state_ = State::kRestarting;
      pending_signals_.clear();
      child_->Kill(SIGTERM);
      kill_timer_.Start(options_.stop_timeout_ms, [this] {
        if (child_) child_->Kill(SIGKILL);
      });
      return;
    default:
      // kIdle: Start() takes them; kRestarting, kBackoff: the next start takes the newest.
      return;
  }
}

void Supervisor::Stop() {
  switch (state_) {
    case State::kRunning:
    case State::kRestarting:
      state_ = State::kStopping;
      pending_signals_.clear();
      child_->Kill(SIGTERM);
      kill_timer_.Start(options_.stop_timeout_ms, [this] {
        if (child_) {
          LOG(WARNING) << options_.name << "[" << child_->pid() << "] did not stop in "
                       << options_.stop_timeout_ms << " ms: SIGKILL";
          child_->Kill(SIGKILL);
        }
      });
      return;
    case State::kStopping:
      if (child_) child_->Kill(SIGTERM);  // frontend-cache: a second signal ends the lameduck
      return;
    case State::kIdle:
    case State::kBackoff:
      state_ = State::kStopped;
      backoff_timer_.Stop();
      stopped_timer_.Start(0, [this] {
        if (callbacks_.on_stopped) callbacks_.on_stopped(0, 0);
      });
      return;
    case State::kStopped:
    case State::kGaveUp:
      return;
  }
}

}  // namespace kdns::nanny

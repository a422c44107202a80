// Supervisor: runs the one child (frontend-cache or dnsmasq) and keeps it running.
//
//   - Never two children at once: a new child is started only after the old one's exit was
//     reaped (ChildProcess reports the exit after waitpid and after its output pipes closed).
//   - Every child starts through the exec trampoline (exec_trampoline.h), with the nanny's
//     listening sockets as LISTEN_FDS when the nanny holds them, so the port stays open
//     across restarts and crashes.
//   - Reload() (in-place mode) sends SIGHUP, but only once /proc shows the child ignores
//     or catches it; until then the reload waits (5 ms polls). A child started meanwhile
//     reads the current servers file anyway.
//   - Restart() (restart mode) sends SIGTERM, waits for the exit (SIGKILL after
//     stop_timeout_ms), then starts the child with the new arguments. Requests that arrive
//     meanwhile are merged: the newest arguments win.
//   - A child that exits unasked is restarted as CrashLoop decides; when it says give up,
//     on_give_up runs (the nanny exits non-zero).
//   - Stop() sends SIGTERM (frontend-cache's lameduck) and reports the exit; a second
//     Stop() sends SIGTERM again (frontend-cache then exits at once).
// The child's stdout and stderr go to the nanny's log line by line.
//
// Thread: the loop's thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/clock.h"
#include "common/loop/child_process.h"
#include "common/loop/loop.h"
#include "common/loop/timer.h"
#include "nanny/crash_loop.h"

namespace kdns::nanny {

class Supervisor {
 public:
  struct Options {
    std::string name = "frontend-cache";  // for logs
    std::vector<std::string> argv;        // the program and the fixed arguments
    std::string trampoline;               // the nanny's executable (exec_trampoline.h)
    std::vector<int> listen_fds;          // handed over as LISTEN_FDS from fd 3 (may be empty)
    CrashLoop::Options crash_loop;
    uint64_t stop_timeout_ms = 30'000;  // SIGTERM, then SIGKILL after this
    uint64_t signal_poll_ms = 5;        // how often /proc is asked while a signal waits
  };
  struct Callbacks {
    std::function<void()> on_give_up;                            // crash loop: stop the nanny
    std::function<void(int64_t status, int signal)> on_stopped;  // after Stop(): the exit
    std::function<void(bool after_crash)> on_started;            // each child started
    std::function<void(std::string_view line)> on_line;          // optional, besides the log
  };
  enum class State { kIdle, kRunning, kRestarting, kBackoff, kStopping, kStopped, kGaveUp };

  Supervisor(loop::Loop& loop, Options options, Callbacks callbacks,
             const Clock& clock = SteadyClock::Instance());
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts the first child with `generated` after Options::argv. A failure to spawn at all
  // (the trampoline missing) is *error; a child that fails to exec exits 127 and counts as
  // a crash.
  [[nodiscard]] bool Start(std::vector<std::string> generated, std::string* error);
  // SIGHUP to the running child once it is safe (see above); nothing when none runs.
  void Reload();
  // A signal (SIGUSR1 for -logInterval) once it is safe; dropped when no child runs.
  void SendWhenSafe(int signum);
  // Replaces the child: stop, wait for its exit, start with `generated`.
  void Restart(std::vector<std::string> generated);
  void Stop();

  State state() const { return state_; }
  pid_t pid() const;
  uint64_t crash_restarts() const { return crash_restarts_; }
  uint64_t config_restarts() const { return config_restarts_; }
  const std::vector<std::string>& generated() const { return generated_; }

 private:
  bool Spawn(std::string* error);
  void OnExit(int64_t status, int signal);
  void SpawnOrGiveUp(bool after_crash);
  void PollSignals();
  void Retire();

  loop::Loop& loop_;
  Options options_;
  Callbacks callbacks_;
  const Clock& clock_;
  State state_ = State::kIdle;
  std::vector<std::string> generated_;
  std::unique_ptr<loop::ChildProcess> child_;
  std::vector<std::unique_ptr<loop::ChildProcess>> retired_;  // freed outside their callbacks
  uint64_t started_ms_ = 0;
  std::vector<int> pending_signals_;  // wait until SignalIsSafe
  CrashLoop crash_loop_;
  uint64_t crash_restarts_ = 0;
  uint64_t config_restarts_ = 0;
  loop::Timer signal_timer_;
  loop::Timer backoff_timer_;
  loop::Timer kill_timer_;
  loop::Timer retire_timer_;
  loop::Timer stopped_timer_;
};

const char* StateName(Supervisor::State state);

}  // namespace kdns::nanny

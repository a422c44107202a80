#include "nanny/supervisor.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "nanny/listen_sockets.h"

namespace kdns::nanny {
namespace {

using loop::testing::RunUntil;

// A shell child that traps TERM (and HUP once `ready`), prints what happens, and waits in
// the shell's `wait` so trapped signals run at once.
std::vector<std::string> ShellChild(const std::string& before_traps) {
  return {"/bin/sh", "-c",
          before_traps +
              "trap 'echo hup' HUP; trap 'echo stopping $$; kill $p 2>/dev/null; exit 0' TERM; "
              "echo start $$ \"$@\"; "
              "while :; do sleep 1000 & p=$!; wait $p; kill $p 2>/dev/null; done",
          "sh"};
}

struct Events {
  std::vector<std::string> lines;
  int started = 0;
  int crash_starts = 0;
  bool gave_up = false;
  bool stopped = false;
  int64_t status = -1;
  int signal = -1;

  Supervisor::Callbacks Callbacks() {
    Supervisor::Callbacks callbacks;
    callbacks.on_give_up = [this] { gave_up = true; };
    callbacks.on_stopped = [this](int64_t s, int sig) {
      stopped = true;
      status = s;
      signal = sig;
    };
    callbacks.on_started = [this](bool after_crash) {
      ++started;
      if (after_crash) ++crash_starts;
    };
    callbacks.on_line = [this](std::string_view line) { lines.emplace_back(line); };
    return callbacks;
  }
  int Count(const std::string& prefix) const {
    int n = 0;
    for (const auto& line : lines) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
};

Supervisor::Options Fast(std::vector<std::string> argv) {
  Supervisor::Options options;
  options.name = "child";
  options.argv = std::move(argv);
  options.crash_loop = CrashLoop::Options{10'000, 3, 1, 10};
  options.stop_timeout_ms = 5'000;
  return options;
}

}  // namespace

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "a crashing child is restarted, then the supervisor gives up",
                 "[nanny][process]") {
  Events events;
  Supervisor supervisor(loop, Fast({"/bin/sh", "-c", "echo run; exit 3"}), events.Callbacks());
  std::string error;
  REQUIRE(supervisor.Start({}, &error));
  REQUIRE(RunUntil(loop, [&] { return events.gave_up; }));
  CHECK(events.started == 3);  // the first start and two restarts; the third crash ends it
  CHECK(events.crash_starts == 2);
  CHECK(supervisor.crash_restarts() == 2);
  CHECK(supervisor.state() == Supervisor::State::kGaveUp);
  CHECK(events.Count("run") == 3);
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "a killed child is back at once, with its arguments",
                 "[nanny][process]") {
  Events events;
  // exec: no grandchild outlives the kill -9 (it would hold the output pipes).
  Supervisor supervisor(loop,
                        Fast({"/bin/sh", "-c", "echo start $$ \"$@\"; exec sleep 1000", "sh"}),
                        events.Callbacks());
  std::string error;
  REQUIRE(supervisor.Start({"--server=1.2.3.4"}, &error));
  REQUIRE(RunUntil(loop, [&] { return events.Count("start") == 1; }));
  const pid_t first = supervisor.pid();
  REQUIRE(kill(first, SIGKILL) == 0);
  REQUIRE(RunUntil(loop, [&] { return events.Count("start") == 2; }));
  CHECK(supervisor.pid() != first);
  CHECK(events.lines.back() == "start " + std::to_string(supervisor.pid()) + " --server=1.2.3.4");
  CHECK(supervisor.crash_restarts() == 1);
  supervisor.Stop();
  REQUIRE(RunUntil(loop, [&] { return events.stopped; }));
  CHECK(events.signal == SIGTERM);
}

TEST_CASE_METHOD(
    loop::testing::LoopFixture,
    "a restart waits for the old child's exit; merged requests take the newest arguments",
    "[nanny][process]") {
  Events events;
  // The child takes a while to stop: a new one started early would overlap it.
  auto argv = ShellChild("");
  argv[2] =
      "trap 'echo stopping $$; sleep 0.1; echo gone $$; kill $p 2>/dev/null; exit 0' "
      "TERM; echo start $$ \"$@\"; "
      "while :; do sleep 1000 & p=$!; wait $p; kill $p 2>/dev/null; done";
  Supervisor supervisor(loop, Fast(argv), events.Callbacks());
  std::string error;
  REQUIRE(supervisor.Start({"v1"}, &error));
  REQUIRE(RunUntil(loop, [&] { return events.Count("start") == 1; }));
  supervisor.Restart({"v2"});
  supervisor.Restart({"v3"});  // while v1 stops: v2 is never started
  CHECK(supervisor.state() == Supervisor::State::kRestarting);
  REQUIRE(RunUntil(loop, [&] { return events.Count("start") == 2; }));
  CHECK(supervisor.config_restarts() == 1);
  // Lines in order: start v1, stopping, gone, start v3: never two alive.
  std::vector<std::string> kinds;
  for (const auto& line : events.lines) kinds.push_back(line.substr(0, line.find(' ')));
  CHECK(kinds == std::vector<std::string>{"start", "stopping", "gone", "start"});
  CHECK(events.lines.back().ends_with(" v3"));
  CHECK(supervisor.crash_restarts() == 0);
  supervisor.Stop();
  REQUIRE(RunUntil(loop, [&] { return events.stopped; }));
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "a reload waits until the child can take SIGHUP",
                 "[nanny][process]") {
  Events events;
  // For its first 200 ms the child would die of a SIGHUP (default action).
  Supervisor supervisor(loop, Fast(ShellChild("sleep 0.2; ")), events.Callbacks());
  std::string error;
  REQUIRE(supervisor.Start({}, &error));
  supervisor.Reload();
  supervisor.Reload();  // merged with the first
  REQUIRE(RunUntil(loop, [&] { return events.Count("hup") == 1; }));
  CHECK(events.Count("start") == 1);
  CHECK(supervisor.crash_restarts() == 0);
  supervisor.Reload();
  REQUIRE(RunUntil(loop, [&] { return events.Count("hup") == 2; }));
  supervisor.Stop();
  REQUIRE(RunUntil(loop, [&] { return events.stopped; }));
  CHECK(events.started == 1);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "the held sockets reach every child from fd 3, with LISTEN_FDS",
                 "[nanny][process]") {
  ListenSockets sockets;
  std::string error;
  REQUIRE(sockets.Bind({*loop::SocketAddress::Parse("127.0.0.1:0")}, &error));
  Events events;
  auto options =
      Fast(ShellChild("echo fds=$LISTEN_FDS; test -S /proc/$$/fd/3 && echo sock3; "
                      "test -S /proc/$$/fd/4 && echo sock4; test -e /proc/$$/fd/5 || echo no5; "));
  options.listen_fds = sockets.fds();
  Supervisor supervisor(loop, options, events.Callbacks());
  REQUIRE(supervisor.Start({}, &error));
  REQUIRE(RunUntil(loop, [&] { return events.Count("start") == 1; }));
  CHECK(events.lines == std::vector<std::string>{"fds=2", "sock3", "sock4", "no5",
                                                 "start " + std::to_string(supervisor.pid())});
  supervisor.Stop();
  REQUIRE(RunUntil(loop, [&] { return events.stopped; }));
}

TEST_CASE_METHOD(loop::testing::LoopFixture, "stopping during a backoff reports at once",
                 "[nanny][process]") {
  Events events;
  auto options = Fast({"/bin/sh", "-c", "exit 1"});
  options.crash_loop = CrashLoop::Options{10'000, 10, 60'000, 60'000};
  Supervisor supervisor(loop, options, events.Callbacks());
  std::string error;
  REQUIRE(supervisor.Start({}, &error));
  REQUIRE(RunUntil(loop, [&] { return supervisor.state() == Supervisor::State::kBackoff; }));
  supervisor.Stop();
  REQUIRE(RunUntil(loop, [&] { return events.stopped; }));
  CHECK(supervisor.state() == Supervisor::State::kStopped);
}

}  // namespace kdns::nanny

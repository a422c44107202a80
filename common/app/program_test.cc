#include "common/app/program.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>

namespace kdns::app {
namespace {

struct Exit {
  int status = -1;
  std::string stderr_text;
};

// Runs `body` in a child process (these functions end the process) and collects its exit
// status and what it wrote to stderr.
Exit RunInChild(const std::function<void()>& body) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    body();
    _exit(99);
  }
  close(pipe_fds[1]);
  Exit result;
  char buffer[256];
  ssize_t n = 0;
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) result.stderr_text.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  result.status = WEXITSTATUS(status);
  return result;
}

TEST_CASE("A start-up failure is one line naming the program, and exit status 2", "[app]") {
  Exit exit = RunInChild([] {
    SetProgram({"probe-program", "usage"});
    Fail("--port: not a port");
  });
  CHECK(exit.status == 2);
  CHECK(exit.stderr_text == "probe-program: --port: not a port\n");
}

TEST_CASE("An argument that is not a flag stops the program at parse time", "[app]") {
  Exit exit = RunInChild([] {
    SetProgram({"probe-program", "usage"});
    ParseFlags({"probe-program", "stray"});
  });
  CHECK(exit.status == 2);
  CHECK(exit.stderr_text == "probe-program: unknown argument: stray\n");
}

TEST_CASE("--check-flags exits 0 once the options are built, and only then", "[app]") {
  CHECK(RunInChild([] { ExitIfCheckingFlags(true); }).status == 0);
  CHECK(RunInChild([] { ExitIfCheckingFlags(false); }).status == 99);
}

TEST_CASE("Blocked signals stay pending until this thread takes them", "[app]") {
  sigset_t before;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  const sigset_t set = BlockSignals({SIGUSR2});
  REQUIRE(raise(SIGUSR2) == 0);  // would end the process if it were not blocked
  timespec no_wait{0, 0};
  CHECK(sigtimedwait(&set, nullptr, &no_wait) == SIGUSR2);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

}  // namespace
}  // namespace kdns::app

#include "common/loop/child_process.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/loop/loop_test_util.h"

namespace kdns::loop {
namespace {

struct Result {
  std::vector<std::string> out;
  std::vector<std::string> err;
  bool exited = false;
  int64_t status = -1;
  int signal = -1;
};

std::unique_ptr<ChildProcess> Run(Loop& loop, const ChildProcess::Options& options, Result& r) {
  std::string error;
  auto child = ChildProcess::Spawn(
      loop, options,
      [&r](ChildProcess::Stream s, std::string_view line) {
        (s == ChildProcess::Stream::kStdout ? r.out : r.err).emplace_back(line);
      },
      [&r](int64_t status, int signal) {
        r.exited = true;
        r.status = status;
        r.signal = signal;
      },
      &error);
  INFO(error);
  REQUIRE(child != nullptr);
  return child;
}

// Options that run `script` with /bin/sh -c.
ChildProcess::Options Shell(std::string script) {
  ChildProcess::Options options;
  options.argv = {"/bin/sh", "-c", std::move(script)};
  return options;
}

// Runs `loop` until the child Run started has exited.
void RequireExits(Loop& loop, const Result& r) {
  REQUIRE(testing::RunUntil(loop, [&] { return r.exited; }));
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "ChildProcess captures stdout and stderr lines and the exit status",
                 "[loop][child]") {
  Result r;
  ChildProcess::Options options =
      Shell("echo one; echo two; echo oops >&2; printf 'no newline'; exit 3");
  auto child = Run(loop, options, r);
  CHECK(child->pid() > 0);
  RequireExits(loop, r);
  CHECK(r.out == std::vector<std::string>{"one", "two", "no newline"});
  CHECK(r.err == std::vector<std::string>{"oops"});
  CHECK(r.status == 3);
  CHECK(r.signal == 0);
}

TEST_CASE_METHOD(testing::LoopFixture, "ChildProcess splits lines longer than the bound",
                 "[loop][child]") {
  Result r;
  ChildProcess::Options options = Shell("echo 0123456789abcdefghij_tail; echo short");
  options.max_line_bytes = 10;
  auto child = Run(loop, options, r);
  RequireExits(loop, r);
  CHECK(r.out == std::vector<std::string>{"0123456789", "abcdefghij", "_tail", "short"});
}

TEST_CASE_METHOD(testing::LoopFixture, "ChildProcess passes environment additions and extra fds",
                 "[loop][child]") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  Result r;
  ChildProcess::Options options = Shell("echo \"$KDNS_TEST_VALUE\"; echo via-fd3 >&3");
  options.env_additions = {"KDNS_TEST_VALUE=hello world", "PATH=/usr/bin:/bin"};
  options.extra_fds = {fds[1]};  // becomes fd 3 in the child
  auto child = Run(loop, options, r);
  close(fds[1]);
  RequireExits(loop, r);
  CHECK(r.out == std::vector<std::string>{"hello world"});
  char buf[64] = {};
  ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  CHECK(std::string(buf, n > 0 ? n : 0) == "via-fd3\n");
  CHECK(r.status == 0);
}

TEST_CASE_METHOD(testing::LoopFixture, "ChildProcess::Kill ends the child and reports the signal",
                 "[loop][child]") {
  Result r;
  ChildProcess::Options options = Shell("echo ready; exec sleep 30");
  auto child = Run(loop, options, r);
  REQUIRE(testing::RunUntil(loop, [&] { return r.out.size() == 1; }));
  CHECK(child->Kill(SIGTERM));
  RequireExits(loop, r);
  CHECK(r.signal == SIGTERM);
  CHECK(child->exited());
  CHECK_FALSE(child->Kill(SIGTERM));
}

TEST_CASE_METHOD(testing::LoopFixture, "Spawning a missing program fails with a clear error",
                 "[loop][child]") {
  ChildProcess::Options options;
  options.argv = {"/nonexistent/kdns-no-such-program"};
  std::string error;
  auto child = ChildProcess::Spawn(loop, options, nullptr, nullptr, &error);
  CHECK(child == nullptr);
  CHECK_THAT(error, Catch::Contains("no such file"));
}

}  // namespace
}  // namespace kdns::loop

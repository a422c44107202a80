#include "nanny/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "common/base/unique_fd.h"

extern char** environ;

namespace kdns::nanny {
namespace {

using Clock = std::chrono::steady_clock;

// Reads what is there from `fd` into *out (up to the cap); false at EOF or on an error.
bool Drain(int fd, std::string* out) {
  char buffer[4096];
  const ssize_t n = read(fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  if (out->size() < ProcessRunner::kMaxOutputBytes) out->append(buffer, static_cast<size_t>(n));
  return true;
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string CommandResult::Describe(const std::vector<std::string>& argv) const {
  std::string text;
  for (const std::string& arg : argv) text += (text.empty() ? "" : " ") + arg;
  text += exit_status >= 0 ? ": exit " + std::to_string(exit_status) : std::string(": failed");
  const std::string first_line = error.substr(0, error.find('\n'));
  if (!first_line.empty()) text += ": " + first_line;
  return text;
}

CommandResult ProcessRunner::Run(const std::vector<std::string>& argv) {
  CommandResult result;
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + strerror(errno);
    return result;
  }
  UniqueFd out_read(out_pipe[0]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + strerror(errno);
    close(out_pipe[1]);
    return result;
  }
  UniqueFd err_read(err_pipe[0]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  // The nanny ignores some signals and libuv handles others: the tool starts with defaults.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(out_pipe[1]);  // the child holds its copies; EOF comes when it exits
  close(err_pipe[1]);
  if (spawned != 0) {
    result.error = argv[0] + ": " + strerror(spawned);
    return result;
  }

  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  bool out_open = true;
  bool err_open = true;
  bool timed_out = false;
  while (out_open || err_open) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_read.get() : -1, POLLIN, 0},
                     {err_open ? err_read.get() : -1, POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (out_open && fds[0].revents != 0) out_open = Drain(out_read.get(), &result.output);
    if (err_open && fds[1].revents != 0) err_open = Drain(err_read.get(), &result.error);
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    result.exit_status = -1;
    result.error = "timed out after " + std::to_string(timeout_ms_) + " ms";
  } else if (WIFEXITED(status)) {
    result.exit_status = WEXITSTATUS(status);
  }
  return result;
}

bool ProcessRunner::Exists(const std::string& program) {
  return FindInPath(program, SearchPath()).has_value();
}

std::optional<std::string> FindInPath(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) {
    return Executable(name) ? std::optional<std::string>(name) : std::nullopt;
  }
  size_t start = 0;
  while (start <= path.size()) {
    const size_t colon = path.find(':', start);
    const std::string dir =
        path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (Executable(candidate)) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return std::nullopt;
}

std::string SearchPath() {
  const char* path = std::getenv("PATH");
  return path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
}

}  // namespace kdns::nanny

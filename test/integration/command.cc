#include "test/integration/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

namespace kdns::testing {

CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_s) {
  CommandResult result;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return result;
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      result.output += "\n[killed after time limit]\n";
      break;
    }
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

bool HaveProgram(const std::string& program) {
  return RunCommand({"sh", "-c", "command -v " + program}, 5).exit_code == 0;
}

std::vector<std::string> RecordLines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == ';') continue;
    std::string folded;
    bool in_quotes = false;
    // Fold white space outside quoted character-strings only.
    for (char c : line) {
      if (c == '"') in_quotes = !in_quotes;
      bool space = (c == ' ' || c == '\t');
      if (space && !in_quotes) {
        if (!folded.empty() && folded.back() != ' ') folded += ' ';
      } else {
        folded += c;
      }
    }
    while (!folded.empty() && folded.back() == ' ') folded.pop_back();
    if (!folded.empty()) lines.push_back(folded);
  }
  return lines;
}

std::vector<std::string> HeaderFlags(const std::string& output) {
  std::vector<std::string> flags;
  // dig prints ";; flags:", kdig ";; Flags:".
  auto pos = output.find(";; flags:");
  if (pos == std::string::npos) pos = output.find(";; Flags:");
  if (pos == std::string::npos) return flags;
  auto end = output.find_first_of(";\n", pos + 9);
  std::istringstream in(output.substr(pos + 9, end - pos - 9));
  std::string flag;
  while (in >> flag) flags.push_back(flag);
  return flags;
}

}  // namespace kdns::testing

#include "nanny/exec_trampoline.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/base/next_line.h"

namespace kdns::nanny {
namespace {

std::optional<uint64_t> ParseHexMask(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  if (text.empty() || text.size() > 16) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  return value;
}

}  // namespace

bool IsExecTrampoline(int argc, const char* const* argv) {
  return argc >= 3 && std::string_view(argv[1]) == kExecChildFlag;
}

int RunExecTrampoline(int argc, char** argv) {
  if (argc < 3) return 127;
  if (std::getenv("LISTEN_FDS") != nullptr) {
    const std::string pid = std::to_string(getpid());
    setenv("LISTEN_PID", pid.c_str(), 1);
  }
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGUSR1, SIG_IGN);
  execvp(argv[2], argv + 2);
  const int error = errno;
  std::fprintf(stderr, "nanny: cannot run %s: %s\n", argv[2], std::strerror(error));
  return 127;
}

std::vector<std::string> TrampolineArgv(const std::string& self_exe,
                                        const std::vector<std::string>& child_argv) {
  std::vector<std::string> argv = {self_exe, std::string(kExecChildFlag)};
  argv.insert(argv.end(), child_argv.begin(), child_argv.end());
  return argv;
}

std::optional<std::string> SelfExecutable() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path));
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(path)) return std::nullopt;
  return std::string(path, static_cast<size_t>(n));
}

std::optional<SignalMasks> ParseSignalMasks(std::string_view status_text) {
  SignalMasks masks;
  int found = 0;
  while (!status_text.empty()) {
    const std::string_view line = NextLine(&status_text);
    for (auto [key, field] : {std::pair{std::string_view("SigBlk:"), &masks.blocked},
                              std::pair{std::string_view("SigIgn:"), &masks.ignored},
                              std::pair{std::string_view("SigCgt:"), &masks.caught}}) {
      if (!line.starts_with(key)) continue;
      auto value = ParseHexMask(line.substr(key.size()));
      if (!value) return std::nullopt;
      *field = *value;
      ++found;
    }
  }
  if (found != 3) return std::nullopt;
  return masks;
}

bool SignalIsSafe(pid_t pid, int signum) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/status");
  if (!file) return false;
  std::stringstream text;
  text << file.rdbuf();
  auto masks = ParseSignalMasks(text.str());
  if (!masks || signum < 1 || signum > 64) return false;
  const uint64_t bit = uint64_t{1} << (signum - 1);
  return ((masks->ignored | masks->caught) & bit) != 0;
}

}  // namespace kdns::nanny

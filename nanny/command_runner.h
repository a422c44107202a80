// CommandRunner: runs the network tools of node-local mode (ip, nft, iptables, ip6tables)
// and hands back their exit status and output. An interface, so the code that decides what
// to run (interface.h, firewall.h) is tested with a scripted fake and no root.
//
// ProcessRunner is the real one: synchronous (posix_spawnp, then waiting for the exit on
// the calling thread) with a deadline per command, after which the command gets SIGKILL and
// counts as failed. Synchronous on purpose: the commands take milliseconds, run at start-up,
// every -syncinterval and at teardown, and waiting for the exit ourselves keeps the
// OrphanReaper (which waits only for processes it does not know, on the same thread) out of
// the way. The deadline bounds how long the nanny's loop can be held.
//
// Thread: the caller's; the nanny calls it on its loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdns::nanny {

struct CommandResult {
  // The exit status; -1 when the command could not start, timed out or was killed.
  int exit_status = -1;
  std::string output;  // stdout
  std::string error;   // stderr, or why it did not run

  bool ok() const { return exit_status == 0; }
  // "nft -f x: exit 1: Error: ..." for log lines: the command, how it ended, its stderr's
  // first line.
  std::string Describe(const std::vector<std::string>& argv) const;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CommandResult Run(const std::vector<std::string>& argv) = 0;
  // Whether `program` can be run (found in $PATH).
  virtual bool Exists(const std::string& program) = 0;
};

class ProcessRunner final : public CommandRunner {
 public:
  static constexpr uint64_t kDefaultTimeoutMs = 5'000;
  // Output beyond this is dropped (a listing of our rules is a few KiB).
  static constexpr size_t kMaxOutputBytes = 1 << 20;

  explicit ProcessRunner(uint64_t timeout_ms = kDefaultTimeoutMs) : timeout_ms_(timeout_ms) {}
  CommandResult Run(const std::vector<std::string>& argv) override;
  bool Exists(const std::string& program) override;

 private:
  uint64_t timeout_ms_;
};

// `name` looked up in the colon-separated directory list `path` (an empty entry is the
// current directory): the first executable candidate; a name with a '/' is only checked.
std::optional<std::string> FindInPath(const std::string& name, const std::string& path);

// $PATH, or "/usr/local/bin:/usr/bin:/bin" when it is unset.
std::string SearchPath();

}  // namespace kdns::nanny

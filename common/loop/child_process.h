// ChildProcess: a supervised child process (uv_spawn), for the nanny.
//
// The child gets argv, the parent's environment plus additions, stdin from /dev/null,
// stdout and stderr on pipes that are read line by line into a callback, and extra
// inherited fds at positions 3, 4, ... (listening sockets handed to a new frontend-cache).
// Lines longer than Options::max_line_bytes are delivered in pieces of that size, so a
// child that never prints a newline costs bounded memory.
//
// The exit callback runs once, after the process exited and its pipes reached EOF (so all
// output was delivered first); a grandchild that keeps the pipes open delays it by at most
// kOutputDrainMs.
//
// Thread: the loop's thread only. Destroying a ChildProcess does not kill the child (call
// Kill first); it only stops watching it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/timer.h"

namespace kdns::loop {

class ChildProcess {
 public:
  static constexpr uint64_t kOutputDrainMs = 200;

  enum class Stream { kStdout, kStderr };

  struct Options {
    std::vector<std::string> argv;           // argv[0] is the program (looked up in PATH)
    std::vector<std::string> env_additions;  // "NAME=value", override the parent's
    std::vector<int> extra_fds;              // become fds 3, 4, ... in the child
    size_t max_line_bytes = 4096;
  };

  // `line` has no trailing newline (nor a trailing \r).
  using LineCallback = std::function<void(Stream stream, std::string_view line)>;
  // exit_status is the exit code; term_signal the signal that killed it, or 0.
  using ExitCallback = std::function<void(int64_t exit_status, int term_signal)>;

  // Starts the child. nullptr with *error (e.g. "no such file") if it could not start.
  [[nodiscard]] static std::unique_ptr<ChildProcess> Spawn(Loop& loop, const Options& options,
                                                           LineCallback on_line,
                                                           ExitCallback on_exit,
                                                           std::string* error);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Sends signum. False if the process already exited or the kill failed.
  bool Kill(int signum);
  pid_t pid() const { return pid_; }
  bool exited() const { return exited_; }

 private:
  struct OutputPipe {
    OutputPipe(ChildProcess* o, Stream s) : owner(o), stream(s) {}
    ChildProcess* owner;
    Stream stream;
    UvHandle<uv_pipe_t> handle;
    std::string partial;
    bool open = false;
  };

  ChildProcess(Loop& loop, const Options& options, LineCallback on_line, ExitCallback on_exit);
  static void OnExit(uv_process_t* process, int64_t exit_status, int term_signal) noexcept;
  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) noexcept;
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) noexcept;
  // Returns false if a callback destroyed this object.
  [[nodiscard]] bool EmitLine(OutputPipe& pipe, std::string_view line);
  void ClosePipe(OutputPipe& pipe);
  void MaybeReportExit();

  Options options_;
  LineCallback on_line_;
  ExitCallback on_exit_;
  UvHandle<uv_process_t> process_;
  OutputPipe stdout_;
  OutputPipe stderr_;
  Timer drain_timer_;
  pid_t pid_ = 0;
  bool exited_ = false;
  bool reported_ = false;
  int64_t exit_status_ = 0;
  int term_signal_ = 0;
  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop

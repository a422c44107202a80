#include "common/loop/child_process.h"

#include <glog/logging.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <utility>

#include "common/loop/read_buffer.h"

extern char** environ;

namespace kdns::loop {
namespace {

// A child's output is read into the thread's read buffer, 16 KiB at a time.
constexpr size_t kPipeReadBytes = 16 * 1024;

// The parent's environment with `additions` overriding same-named entries.
std::vector<std::string> BuildEnvironment(const std::vector<std::string>& additions) {
  std::set<std::string> overridden;
  for (const auto& entry : additions) overridden.insert(entry.substr(0, entry.find('=')));
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    if (overridden.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  env.insert(env.end(), additions.begin(), additions.end());
  return env;
}

}  // namespace

std::unique_ptr<ChildProcess> ChildProcess::Spawn(Loop& loop, const Options& options,
                                                  LineCallback on_line, ExitCallback on_exit,
                                                  std::string* error) {
  if (options.argv.empty()) {
    *error = "spawn: empty argv";
    return nullptr;
  }
  std::unique_ptr<ChildProcess> child(
      new ChildProcess(loop, options, std::move(on_line), std::move(on_exit)));

  std::vector<char*> argv;
  argv.reserve(options.argv.size() + 1);
  for (const auto& arg : options.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = BuildEnvironment(options.env_additions);
  std::vector<char*> env;
  env.reserve(env_strings.size() + 1);
  for (const auto& entry : env_strings) env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);

  for (OutputPipe* pipe : {&child->stdout_, &child->stderr_}) {
    CHECK_EQ(pipe->handle.Open(pipe, [&](uv_pipe_t* h) { return uv_pipe_init(loop.get(), h, 0); }),
             0);
  }
  std::vector<uv_stdio_container_t> stdio(3 + options.extra_fds.size());
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
  stdio[1].data.stream = child->stdout_.handle.stream();
  stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
  stdio[2].data.stream = child->stderr_.handle.stream();
  for (size_t i = 0; i < options.extra_fds.size(); ++i) {
    stdio[3 + i].flags = UV_INHERIT_FD;
    stdio[3 + i].data.fd = options.extra_fds[i];
  }

  uv_process_options_t uv_options{};
  uv_options.file = argv[0];
  uv_options.args = argv.data();
  uv_options.env = env.data();
  uv_options.exit_cb = &ChildProcess::OnExit;
  uv_options.stdio_count = static_cast<int>(stdio.size());
  uv_options.stdio = stdio.data();

  // A failed uv_spawn still initialised the handle (it must be closed, not freed), so the
  // result is reported after Open kept it; the destructor closes it and the pipes.
  int rc = 0;
  CHECK_EQ(child->process_.Open(child.get(),
                                [&](uv_process_t* h) {
                                  rc = uv_spawn(loop.get(), h, &uv_options);
                                  return 0;
                                }),
           0);
  if (rc != 0) {
    *error = "spawn " + options.argv[0] + ": " + uv_strerror(rc);
    return nullptr;
  }
  child->pid_ = child->process_->pid;
  for (OutputPipe* pipe : {&child->stdout_, &child->stderr_}) {
    pipe->open = true;
    uv_read_start(pipe->handle.stream(), &ChildProcess::OnAlloc, &ChildProcess::OnRead);
  }
  return child;
}

ChildProcess::ChildProcess(Loop& loop, const Options& options, LineCallback on_line,
                           ExitCallback on_exit)
    : options_(options),
      on_line_(std::move(on_line)),
      on_exit_(std::move(on_exit)),
      stdout_{this, Stream::kStdout},
      stderr_{this, Stream::kStderr},
      drain_timer_(loop) {
  if (options_.max_line_bytes == 0) options_.max_line_bytes = 1;
}

ChildProcess::~ChildProcess() = default;

bool ChildProcess::Kill(int signum) {
  if (exited_ || !process_) return false;
  return uv_process_kill(process_.get(), signum) == 0;
}

void ChildProcess::OnExit(uv_process_t* process, int64_t exit_status, int term_signal) noexcept {
  auto* self = static_cast<ChildProcess*>(process->data);
  if (self == nullptr) return;
  self->exited_ = true;
  self->exit_status_ = exit_status;
  self->term_signal_ = term_signal;
  if (self->stdout_.open || self->stderr_.open) {
    self->drain_timer_.Start(kOutputDrainMs, [self] {
      self->ClosePipe(self->stdout_);
      self->ClosePipe(self->stderr_);
      self->MaybeReportExit();
    });
    return;
  }
  self->MaybeReportExit();
}

void ChildProcess::OnAlloc(uv_handle_t*, size_t, uv_buf_t* buf) noexcept {
  *buf = ThreadReadBuffer(kPipeReadBytes);
}

void ChildProcess::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) noexcept {
  auto* pipe = static_cast<OutputPipe*>(stream->data);
  if (pipe == nullptr || nread == 0) return;
  ChildProcess* self = pipe->owner;
  if (nread < 0) {
    // EOF or error: deliver an unterminated last line, then stop watching this pipe.
    if (!pipe->partial.empty()) {
      std::string last;
      last.swap(pipe->partial);
      if (!self->EmitLine(*pipe, last)) return;
    }
    self->ClosePipe(*pipe);
    if (!self->stdout_.open && !self->stderr_.open) self->MaybeReportExit();
    return;
  }
  std::string_view data(buf->base, static_cast<size_t>(nread));
  const size_t max = self->options_.max_line_bytes;
  while (!data.empty()) {
    size_t newline = data.find('\n');
    size_t room = max - pipe->partial.size();
    if (newline == std::string_view::npos || newline > room) {
      // No end of line within the bound: buffer what fits, emit a full piece if reached.
      size_t take = std::min(room, data.size());
      pipe->partial.append(data.substr(0, take));
      data.remove_prefix(take);
      if (pipe->partial.size() == max) {
        std::string piece;
        piece.swap(pipe->partial);
        if (!self->EmitLine(*pipe, piece)) return;
      }
      continue;
    }
    std::string_view line = data.substr(0, newline);
    data.remove_prefix(newline + 1);
    if (pipe->partial.empty()) {
      if (!self->EmitLine(*pipe, line)) return;
    } else {
      std::string joined;
      joined.swap(pipe->partial);
      joined.append(line);
      if (!self->EmitLine(*pipe, joined)) return;
    }
  }
}

bool ChildProcess::EmitLine(OutputPipe& pipe, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!on_line_) return true;
  internal::DeathWatch::Scope scope(death_watch_);
  Stream stream = pipe.stream;
  internal::CallUser("ChildProcess line", [&] { on_line_(stream, line); });
  return !scope.dead();
}

void ChildProcess::ClosePipe(OutputPipe& pipe) {
  if (!pipe.open) return;
  pipe.open = false;
  uv_read_stop(pipe.handle.stream());
}

void ChildProcess::MaybeReportExit() {
  if (!exited_ || reported_) return;
  reported_ = true;
  drain_timer_.Stop();
  int64_t status = exit_status_;
  int signal = term_signal_;
  if (on_exit_) internal::CallUser("ChildProcess exit", [&] { on_exit_(status, signal); });
}

}  // namespace kdns::loop

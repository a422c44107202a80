// The first step of every child the nanny starts: the nanny binary itself, re-executed as
//   nanny --kdns-exec-child PROGRAM ARGS...
// which prepares what uv_spawn cannot and then execs PROGRAM (the pid stays the same):
//   - LISTEN_PID=<own pid> when LISTEN_FDS is set: the systemd socket-activation protocol
//     wants the child's pid, which the parent only learns after the fork;
//   - SIGHUP and SIGUSR1 ignored: a signal disposition of SIG_IGN survives execve, so a
//     reload (SIGHUP) or statistics request (SIGUSR1) sent before the child has set up its
//     own handling is dropped instead of killing it (default action: terminate). A child
//     that blocks the signal and takes it with sigwaitinfo (frontend-cache) still receives
//     it: the kernel never discards a blocked signal as ignored; a child that installs a
//     handler (dnsmasq) replaces SIG_IGN. A dropped early SIGHUP loses nothing: the child
//     reads its servers file after blocking SIGHUP, and the file was written before the
//     signal was sent.
// The nanny also waits until /proc shows the signal ignored or caught before it sends one
// (SignalIsSafe), which closes the window before the trampoline's first line. (Blocked is
// not enough: a process blocks every signal for a moment around fork, and a signal that
// arrives then is acted on by default once unblocked.)
//
// Runs in the child process before anything else (no logging set up, no threads).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdns::nanny {

inline constexpr std::string_view kExecChildFlag = "--kdns-exec-child";

// Whether argv asks for the trampoline.
bool IsExecTrampoline(int argc, const char* const* argv);

// Prepares and execs argv[2...]. Returns only on failure (exit status 127, as a shell).
int RunExecTrampoline(int argc, char** argv);

// The argv that starts `child_argv` through the trampoline in `self_exe`.
std::vector<std::string> TrampolineArgv(const std::string& self_exe,
                                        const std::vector<std::string>& child_argv);

// The path of the running executable (/proc/self/exe), nullopt if unreadable.
std::optional<std::string> SelfExecutable();

// The masks of /proc/<pid>/status: SigBlk, SigIgn, SigCgt (bit n-1 is signal n).
struct SignalMasks {
  uint64_t blocked = 0;
  uint64_t ignored = 0;
  uint64_t caught = 0;
};
std::optional<SignalMasks> ParseSignalMasks(std::string_view status_text);

// Whether sending `signum` to `pid` cannot kill it by the default action: the signal is
// ignored or caught. False when /proc cannot tell.
bool SignalIsSafe(pid_t pid, int signum);

}  // namespace kdns::nanny

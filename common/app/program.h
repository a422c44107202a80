// Process start-up shared by the four programs' main(): one order, one error line.
//
// Each main.cc defines its flags (common/ reads none) and then, in this order:
//   0. SetProgram(): its name (for Fail()) and --help text;
//   1. takes out what gflags cannot parse (repeatable dnsmasq options, --probe, the nanny's
//      child arguments after "--") with its own tested parser;
//   2. ParseFlags(): gflags over the rest; an argument gflags leaves over stops the program;
//      kube-dns's Go flags without meaning here are taken out first, and --flag-table
//      prints the command line as a table and exits (common/app/flag_table.h);
//   3. builds its options from the flag values, Fail()ing on the first bad one;
//   4. ExitIfCheckingFlags(FLAGS_check_flags): with --check-flags, exit 0 here, having bound,
//      started and logged nothing;
//   5. InitProcess(): time zone, glog, failure signal handler, SIGPIPE ignored;
//   6. wiring; its signals are taken either synchronously (BlockSignals() before any thread
//      starts, then sigwaitinfo) or by a loop::Signal on a libuv loop.
//
// Start-up errors (STYLE.md, "Errors", kind 1) are one line on stderr,
// "<program>: <message>", and exit status 2.
//
// Thread: the main thread, before any other thread starts.
#pragma once

#include <signal.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kdns::app {

struct ProgramInfo {
  std::string_view name;   // the prefix of Fail()'s line, e.g. "kubedns"
  std::string_view usage;  // gflags' usage message (--help)
};

// First thing in main(): names the program for Fail() and gives gflags the version string
// and the usage message.
void SetProgram(const ProgramInfo& info);

// What --flag-table adds to gflags' flags: the lines of the program's own parser
// (frontend-cache's dnsmasq options), in common/app/flag_table.h's format. Before ParseFlags.
void SetFlagTableLines(std::string lines);

// Parses `args` (argv[0] first) with gflags, with glog logging to stderr unless a flag says
// otherwise (a container logs to stderr). Fails on the first argument that is not a flag.
// kube-dns's Go flags without meaning here are taken out first (InitProcess warns of each);
// with --flag-table, prints the table on stdout and exits 0.
void ParseFlags(std::vector<std::string> args);

// With --check-flags the command line was good once the options are built: exit 0.
void ExitIfCheckingFlags(bool check_flags);

// The process-wide set-up, once the command line is known good and before any thread
// starts: glibc's time zone (see common/base/time_zone.h), glog (then a warning for each
// flag ParseFlags ignored), its failure signal handler
// (a stack trace on SIGSEGV), and SIGPIPE ignored (a client that closes its TCP connection
// while we write must cost that connection only; sockets report EPIPE instead).
void InitProcess(const char* argv0);

// Blocks `numbers` in this thread and in every thread it starts later, so that they are
// taken synchronously (sigwaitinfo) by this thread alone. Blocked before threads start, a
// signal that arrives early (the nanny's SIGHUP while the child starts) waits instead of
// killing the process. Returns the set, for sigwaitinfo and sigtimedwait.
sigset_t BlockSignals(std::initializer_list<int> numbers);

// A fatal start-up error: "<program>: <message>" on stderr, exit status 2.
[[noreturn]] void Fail(std::string_view message);

}  // namespace kdns::app

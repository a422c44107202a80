#include "common/app/program.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <pthread.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>

#include "common/app/flag_table.h"
#include "common/base/time_zone.h"
#include "common/base/version.h"

namespace kdns::app {
namespace {

std::string& ProgramName() {
  static std::string name = "kdns";
  return name;
}

std::string& FlagTableLines() {
  static std::string lines;
  return lines;
}

// ParseFlags' warnings, logged by InitProcess once glog is set up.
std::vector<std::string>& IgnoredFlagWarnings() {
  static std::vector<std::string> warnings;
  return warnings;
}

// Whether the command line asks for --flag-table (before a "--": the nanny's child's
// arguments are not its own).
bool AsksForFlagTable(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--flag-table") return true;
  }
  return false;
}

}  // namespace

void SetProgram(const ProgramInfo& info) {
  ProgramName() = std::string(info.name);
  // --version: "kubedns version 0.2.0-3-gabc1234 (revision <commit>)".
  gflags::SetVersionString(std::string(kVersion) + " (revision " + kRevision + ")");
  gflags::SetUsageMessage(std::string(info.usage));
}

void SetFlagTableLines(std::string lines) { FlagTableLines() = std::move(lines); }

void ParseFlags(std::vector<std::string> args) {
  if (AsksForFlagTable(args)) {
    std::cout << FlagTableText(FlagTableLines()) << std::flush;
    std::exit(0);
  }
  IgnoredFlagWarnings() = TakeOutFlagsWithoutMeaning(&args);
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (auto& arg : args) argv.push_back(arg.data());
  int argc = static_cast<int>(argv.size());
  char** argv_data = argv.data();
  FLAGS_logtostderr = true;
  gflags::ParseCommandLineFlags(&argc, &argv_data, /*remove_flags=*/true);
  if (argc > 1) Fail(std::string("unknown argument: ") + argv_data[1]);
}

void ExitIfCheckingFlags(bool check_flags) {
  if (check_flags) std::exit(0);
}

void InitProcess(const char* argv0) {
  InitTimeZoneBeforeThreads();
  google::InitGoogleLogging(argv0);
  for (const std::string& warning : IgnoredFlagWarnings()) LOG(WARNING) << warning;
  google::InstallFailureSignalHandler();
  signal(SIGPIPE, SIG_IGN);
}

sigset_t BlockSignals(std::initializer_list<int> numbers) {
  sigset_t set;
  sigemptyset(&set);
  for (int number : numbers) sigaddset(&set, number);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

void Fail(std::string_view message) {
  std::cerr << ProgramName() << ": " << message << "\n";
  std::exit(2);
}

}  // namespace kdns::app

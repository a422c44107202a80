#include "common/app/program.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <pthread.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "common/base/time_zone.h"
#include "common/base/version.h"

namespace kdns::app {
namespace {

std::string& ProgramName() {
  static std::string name = "kdns";
  return name;
}

}  // namespace

void SetProgram(const ProgramInfo& info) {
  ProgramName() = std::string(info.name);
  // --version: "kubedns version 0.2.0-3-gabc1234 (revision <commit>)".
  gflags::SetVersionString(std::string(kVersion) + " (revision " + kRevision + ")");
  gflags::SetUsageMessage(std::string(info.usage));
}

void ParseFlags(std::vector<std::string> args) {
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

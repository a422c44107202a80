#include "common/metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "common/base/version.h"

namespace kdns::metrics {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

double CpuSeconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// (virtual, resident) in bytes.
std::pair<double, double> MemoryBytes() {
  const auto pages = ParseStatm(ReadFile("/proc/self/statm"));
  if (!pages) return {0, 0};
  const auto page_bytes = static_cast<double>(sysconf(_SC_PAGESIZE));
  return {static_cast<double>(pages->first) * page_bytes,
          static_cast<double>(pages->second) * page_bytes};
}

double OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  double count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - 1;  // the directory stream's own descriptor
}

// Unlimited is RLIM_INFINITY as a number, as Go's client reports it; unknown is NaN. Never
// 0: open_fds / max_fds (an alert) would be +Inf.
double MaxFds() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(limit.rlim_cur);
}

double StartTimeSeconds() {
  const auto ticks = ParseStatStartTicks(ReadFile("/proc/self/stat"));
  const auto boot = ParseBootTime(ReadFile("/proc/stat"));
  const long hz = sysconf(_SC_CLK_TCK);
  if (!ticks || !boot || hz <= 0) return 0;
  return static_cast<double>(*boot) + static_cast<double>(*ticks) / static_cast<double>(hz);
}

}  // namespace

std::optional<unsigned long long> ParseStatStartTicks(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  // After ") ": field 3 (state) onwards; starttime is field 22, the 20th from here.
  std::istringstream fields{std::string(stat.substr(paren + 1))};
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  if (field.empty() || field.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(field);
}

std::optional<unsigned long long> ParseBootTime(std::string_view proc_stat) {
  std::istringstream lines{std::string(proc_stat)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("btime ", 0) != 0) continue;
    const std::string value = line.substr(6);
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stoull(value);
  }
  return std::nullopt;
}

std::optional<std::pair<unsigned long long, unsigned long long>> ParseStatm(
    std::string_view statm) {
  std::istringstream fields{std::string(statm)};
  unsigned long long size = 0;
  unsigned long long resident = 0;
  if (!(fields >> size >> resident)) return std::nullopt;
  return std::make_pair(size, resident);
}

void RegisterProcessMetrics(Registry& registry, std::string_view program) {
  registry.AddCallbackCounter("process_cpu_seconds_total",
                              "Total user and system CPU time spent in seconds.", CpuSeconds);
  registry.AddCallbackGauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                            [] { return MemoryBytes().second; });
  registry.AddCallbackGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                            [] { return MemoryBytes().first; });
  registry.AddCallbackGauge("process_open_fds", "Number of open file descriptors.", OpenFds);
  registry.AddCallbackGauge("process_max_fds", "Maximum number of open file descriptors.", MaxFds);
  registry
      .AddGauge("process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.")
      .Set(StartTimeSeconds());
  registry
      .AddGaugeFamily("kdns_build_info", "The running build: 1, labelled by program and version.",
                      {"program", "version"})
      .WithLabels({program, kVersion})
      .Set(1);
}

}  // namespace kdns::metrics

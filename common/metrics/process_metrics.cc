#include "common/metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

// One series labelled with the program's name, read at each render.
class OneSeries final : public Collector {
 public:
  OneSeries(std::string program, std::function<double()> read)
      : program_(std::move(program)), read_(std::move(read)) {}
  void Collect(std::vector<Sample>& out) const override { out.push_back({{program_}, read_()}); }

 private:
  const std::string program_;
  const std::function<double()> read_;
};

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

void RegisterProcessMetrics(Registry& registry, std::string_view program, ProcessSeries series) {
  const std::string program_name(program);
  auto add = [&](std::string name, std::string help, MetricType type,
                 std::function<double()> read) {
    if (series == ProcessSeries::kProgramLabel) {
      registry.AddCollector(std::move(name), std::move(help), type, {"program"},
                            std::make_shared<OneSeries>(program_name, std::move(read)));
    } else if (type == MetricType::kCounter) {
      registry.AddCallbackCounter(std::move(name), std::move(help), std::move(read));
    } else {
      registry.AddCallbackGauge(std::move(name), std::move(help), std::move(read));
    }
  };
  add("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
      MetricType::kCounter, CpuSeconds);
  add("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::kGauge,
      [] { return MemoryBytes().second; });
  add("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::kGauge,
      [] { return MemoryBytes().first; });
  add("process_open_fds", "Number of open file descriptors.", MetricType::kGauge, OpenFds);
  add("process_max_fds", "Maximum number of open file descriptors.", MetricType::kGauge, MaxFds);
  const double start = StartTimeSeconds();
  add("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
      MetricType::kGauge, [start] { return start; });
  registry
      .AddGaugeFamily("kdns_build_info",
                      "The running build: 1, labelled by program, version (git describe) and "
                      "revision (the commit).",
                      {"program", "version", "revision"})
      .WithLabels({program, kVersion, kRevision})
      .Set(1);
}

}  // namespace kdns::metrics

#include "common/base/cpu_quota.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

namespace kdns {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  return text;
}

std::optional<int64_t> ParseInt(std::string_view text) {
  text = Trim(text);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// "/a/b/c" -> "/a/b/c", "/a/b", "/a", "/" (the cgroup and its ancestors).
std::vector<std::string> SelfAndAncestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/' && path.size() > 1) path.pop_back();
  if (path.empty() || path.front() != '/') path = "/" + path;
  while (true) {
    out.push_back(path);
    if (path == "/") break;
    path.resize(path.rfind('/') == 0 ? 1 : path.rfind('/'));
  }
  return out;
}

void KeepSmaller(std::optional<double> quota, std::optional<double>* smallest) {
  if (quota && (!*smallest || *quota < **smallest)) *smallest = quota;
}

// The CPUs this process may run on: its affinity mask, else the machine's.
size_t OnlineCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<size_t>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();
}

}  // namespace

std::optional<double> ParseCgroupV2CpuMax(std::string_view text) {
  text = Trim(text);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view quota = text.substr(0, space);
  if (quota == "max") return std::nullopt;
  const auto quota_us = ParseInt(quota);
  const auto period_us = ParseInt(text.substr(space + 1));
  if (!quota_us || !period_us || *quota_us <= 0 || *period_us <= 0) return std::nullopt;
  return static_cast<double>(*quota_us) / static_cast<double>(*period_us);
}

std::optional<double> ParseCgroupV1CpuQuota(std::string_view quota_us, std::string_view period_us) {
  const auto quota = ParseInt(quota_us);
  const auto period = ParseInt(period_us);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::optional<double> ReadCgroupCpuQuota(const std::string& root) {
  const std::string base = root.empty() || root.back() != '/' ? root + "/" : root;
  const auto self = ReadFile(base + "proc/self/cgroup");
  if (!self) return std::nullopt;
  std::optional<double> smallest;
  std::istringstream lines(*self);
  std::string line;
  // Each line: "<id>:<controllers>:<path>"; v2's is "0::<path>".
  while (std::getline(lines, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::vector<std::string> mounts;
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      mounts = {"sys/fs/cgroup", "sys/fs/cgroup/unified"};
    } else {
      bool has_cpu = false;
      std::istringstream names(controllers);
      for (std::string name; std::getline(names, name, ',');) has_cpu |= name == "cpu";
      if (!has_cpu) continue;
      mounts = {"sys/fs/cgroup/" + controllers, "sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct"};
    }
    const bool v2 = controllers.empty();
    for (const std::string& mount : mounts) {
      // The cgroup and each ancestor up to the mount point itself (which is the process's
      // own cgroup under a cgroup namespace).
      std::vector<std::string> dirs = SelfAndAncestors(path);
      for (std::string& dir : dirs) {
        std::string full = base;
        full += mount;
        if (dir != "/") full += dir;
        dir = std::move(full);
      }
      for (const std::string& dir : dirs) {
        if (v2) {
          if (auto text = ReadFile(dir + "/cpu.max"))
            KeepSmaller(ParseCgroupV2CpuMax(*text), &smallest);
        } else {
          auto quota = ReadFile(dir + "/cpu.cfs_quota_us");
          auto period = ReadFile(dir + "/cpu.cfs_period_us");
          if (quota && period) KeepSmaller(ParseCgroupV1CpuQuota(*quota, *period), &smallest);
        }
      }
    }
  }
  return smallest;
}

size_t UsableCpus(std::optional<double> quota, size_t online) {
  size_t cpus = std::max<size_t>(1, online);
  if (quota && *quota > 0) {
    cpus = std::min(cpus, static_cast<size_t>(std::ceil(*quota)));
  }
  return std::max<size_t>(1, cpus);
}

size_t UsableCpus() { return UsableCpus(ReadCgroupCpuQuota(), OnlineCpus()); }

DefaultThreadCount DefaultThreads(std::optional<double> quota, size_t online) {
  DefaultThreadCount count;
  count.cpus = UsableCpus(quota, online);
  count.cpu_limited = quota && *quota > 0;  // as UsableCpus reads it
  count.capped = !count.cpu_limited && count.cpus > kUnlimitedDefaultThreads;
  count.threads = count.capped ? kUnlimitedDefaultThreads : count.cpus;
  return count;
}

DefaultThreadCount DefaultThreads() { return DefaultThreads(ReadCgroupCpuQuota(), OnlineCpus()); }

std::string DescribeDefaultThreads(const DefaultThreadCount& count, std::string_view flag) {
  const std::string cpus = std::to_string(count.cpus) + (count.cpus == 1 ? " CPU" : " CPUs");
  const std::string threads =
      std::to_string(count.threads) + (count.threads == 1 ? " DNS thread" : " DNS threads");
  if (count.cpu_limited) return cpus + " (the CPU limit): using " + threads + ", one per CPU";
  if (!count.capped) return cpus + ", no CPU limit: using " + threads + ", one per CPU";
  return cpus + ", no CPU limit: using " + threads + "; " + std::string(flag) + " to use more";
}

}  // namespace kdns

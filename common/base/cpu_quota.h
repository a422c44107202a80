// How many CPUs this process may use: the smaller of the CPUs it may run on (its affinity
// mask) and its cgroup's CPU quota (a container's `resources.limits.cpu`), rounded up.
// The servers size their thread pools with it when no thread count is given
// (DefaultThreads), so a pod limited to 2 CPUs on a 64-core node runs 2 DNS threads, not 64
// that the kernel throttles; a pod with no CPU limit runs at most kUnlimitedDefaultThreads,
// not one per core of whatever node it lands on, since every thread costs memory (about
// 0.09 MiB idle, more once busy: docs/operators.md "Memory per thread") against a memory
// limit that does not grow with the node.
//
// Both cgroup versions are read: v2's `cpu.max` ("max 100000" or "150000 100000") and v1's
// `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1: no quota), for the process's own cgroup
// (from /proc/self/cgroup) and each of its ancestors, the smallest quota winning (a quota on
// a parent, e.g. the pod's, limits every child). Without a cgroup namespace the process's
// cgroup path is the host's, so it is looked up under the mount point as well as at the
// mount point itself (what a container with a cgroup namespace sees).
//
// Thread: pure functions, and readers of /proc and /sys with no state.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kdns {

// cgroup v2 cpu.max: CPUs allowed, or nullopt for "max" (no quota) or text that is not
// "<quota> <period>".
std::optional<double> ParseCgroupV2CpuMax(std::string_view text);

// cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us: CPUs allowed, or nullopt for a
// negative quota (no quota) or unreadable values.
std::optional<double> ParseCgroupV1CpuQuota(std::string_view quota_us, std::string_view period_us);

// The CPU quota of the process, read under `root` ("/" in production; a directory laid
// out like / in tests): nullopt when no cgroup in its path has one.
std::optional<double> ReadCgroupCpuQuota(const std::string& root = "/");

// CPUs usable: min(online, ceil(quota)), at least 1. `online` is what the process may run
// on (0 counts as 1).
size_t UsableCpus(std::optional<double> quota, size_t online);

// UsableCpus() of this process: its affinity mask and ReadCgroupCpuQuota().
size_t UsableCpus();

// The most threads a server starts by default without a CPU limit; a flag asks for more.
inline constexpr size_t kUnlimitedDefaultThreads = 8;

// A server's thread count when its flag gives none, and why.
struct DefaultThreadCount {
  size_t threads = 1;
  size_t cpus = 1;           // UsableCpus()
  bool cpu_limited = false;  // a cgroup CPU quota applies: one thread per CPU of it
  bool capped = false;       // no quota, more CPUs than kUnlimitedDefaultThreads
};

// One thread per usable CPU with a CPU quota; without one, one per CPU the process may run
// on, at most kUnlimitedDefaultThreads.
DefaultThreadCount DefaultThreads(std::optional<double> quota, size_t online);
// DefaultThreads() of this process (as UsableCpus()).
DefaultThreadCount DefaultThreads();

// The log line of a server that starts `count` by default: how many and why, naming
// `flag` (e.g. "--threads") where the cap chose fewer threads than CPUs.
std::string DescribeDefaultThreads(const DefaultThreadCount& count, std::string_view flag);

}  // namespace kdns

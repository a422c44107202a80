#include "common/base/cpu_quota.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "test/unit/temp_dir.h"

namespace kdns {
namespace {

using kdns::testing::TempDir;

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST_CASE("cgroup v2 cpu.max reads as CPUs, max as no quota", "[base]") {
  CHECK(ParseCgroupV2CpuMax("150000 100000\n") == 1.5);
  CHECK(ParseCgroupV2CpuMax("200000 100000") == 2.0);
  CHECK_FALSE(ParseCgroupV2CpuMax("max 100000\n"));
  CHECK_FALSE(ParseCgroupV2CpuMax("garbage"));
  CHECK_FALSE(ParseCgroupV2CpuMax("0 100000"));
  CHECK_FALSE(ParseCgroupV2CpuMax("100000 0"));
}

TEST_CASE("cgroup v1 cfs quota and period read as CPUs, -1 as no quota", "[base]") {
  CHECK(ParseCgroupV1CpuQuota("50000\n", "100000\n") == 0.5);
  CHECK_FALSE(ParseCgroupV1CpuQuota("-1\n", "100000\n"));
  CHECK_FALSE(ParseCgroupV1CpuQuota("x", "100000"));
}

TEST_CASE("usable CPUs are the quota rounded up, never more than online, at least 1", "[base]") {
  CHECK(UsableCpus(std::nullopt, 64) == 64);
  CHECK(UsableCpus(1.5, 64) == 2);
  CHECK(UsableCpus(0.1, 64) == 1);
  CHECK(UsableCpus(8.0, 4) == 4);
  CHECK(UsableCpus(std::nullopt, 0) == 1);
}

TEST_CASE("default threads follow a CPU limit, else the cores up to 8", "[base]") {
  struct Case {
    std::optional<double> quota;
    size_t online;
    size_t threads;
    bool capped;
  };
  const Case c = GENERATE(Case{std::nullopt, 2, 2, false}, Case{std::nullopt, 8, 8, false},
                          Case{std::nullopt, 16, 8, true}, Case{std::nullopt, 64, 8, true},
                          Case{1.5, 64, 2, false},    // the limit, not the cap
                          Case{16.0, 64, 16, false},  // a limit above the cap is followed
                          Case{32.0, 4, 4, false},    // never more than the cores
                          Case{0.0, 64, 8, true});    // a zero quota is no quota
  const DefaultThreadCount count = DefaultThreads(c.quota, c.online);
  INFO("quota " << c.quota.value_or(-1) << ", " << c.online << " online");
  CHECK(count.threads == c.threads);
  CHECK(count.capped == c.capped);
  CHECK(count.cpu_limited == (c.quota && *c.quota > 0));
  CHECK(count.cpus == UsableCpus(c.quota, c.online));
}

TEST_CASE("the default thread count's log line says why, and the flag when capped", "[base]") {
  CHECK(DescribeDefaultThreads(DefaultThreads(std::nullopt, 64), "--threads") ==
        "64 CPUs, no CPU limit: using 8 DNS threads; --threads to use more");
  CHECK(DescribeDefaultThreads(DefaultThreads(std::nullopt, 4), "--dns-threads") ==
        "4 CPUs, no CPU limit: using 4 DNS threads, one per CPU");
  CHECK(DescribeDefaultThreads(DefaultThreads(0.5, 64), "--threads") ==
        "1 CPU (the CPU limit): using 1 DNS thread, one per CPU");
}

TEST_CASE("a v2 container with a cgroup namespace reads cpu.max at the mount point", "[base]") {
  TempDir root;
  Write(root.File("proc/self/cgroup"), "0::/\n");
  Write(root.File("sys/fs/cgroup/cpu.max"), "250000 100000\n");
  CHECK(ReadCgroupCpuQuota(root.path()) == 2.5);
}

TEST_CASE("a v2 cgroup path without a namespace takes the smallest quota of its ancestors",
          "[base]") {
  TempDir root;
  Write(root.File("proc/self/cgroup"), "0::/kubepods/pod1/ctr\n");
  Write(root.File("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max"), "max 100000\n");
  Write(root.File("sys/fs/cgroup/kubepods/pod1/cpu.max"), "300000 100000\n");
  Write(root.File("sys/fs/cgroup/kubepods/cpu.max"), "max 100000\n");
  CHECK(ReadCgroupCpuQuota(root.path()) == 3.0);
}

TEST_CASE("cgroup v1 reads cfs quota under the cpu controller's mount", "[base]") {
  TempDir root;
  Write(root.File("proc/self/cgroup"),
        "4:memory:/kubepods/pod1\n3:cpu,cpuacct:/kubepods/pod1/ctr\n0::/\n");
  Write(root.File("sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/ctr/cpu.cfs_quota_us"), "150000\n");
  Write(root.File("sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/ctr/cpu.cfs_period_us"), "100000\n");
  Write(root.File("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"), "-1\n");
  Write(root.File("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"), "100000\n");
  CHECK(ReadCgroupCpuQuota(root.path()) == 1.5);
}

TEST_CASE("no cgroup files, or no quota anywhere, is no quota", "[base]") {
  TempDir root;
  CHECK_FALSE(ReadCgroupCpuQuota(root.path()));
  Write(root.File("proc/self/cgroup"), "1:cpu:/\n0::/\n");
  Write(root.File("sys/fs/cgroup/cpu/cpu.cfs_quota_us"), "-1\n");
  Write(root.File("sys/fs/cgroup/cpu/cpu.cfs_period_us"), "100000\n");
  Write(root.File("sys/fs/cgroup/cpu.max"), "max 100000\n");
  CHECK_FALSE(ReadCgroupCpuQuota(root.path()));
}

TEST_CASE("this process's usable CPUs are at least one and at most the hardware's", "[base]") {
  const size_t cpus = UsableCpus();
  CHECK(cpus >= 1);
  CHECK(cpus <= std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace kdns

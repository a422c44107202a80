// The metrics every program serves about itself, under the names Prometheus's client
// libraries use (so kube-dns's Go dashboards and alerts on them keep working):
//
//   process_cpu_seconds_total        user and system CPU time of all threads
//   process_resident_memory_bytes    resident set size
//   process_virtual_memory_bytes     virtual memory size
//   process_open_fds, process_max_fds    open file descriptors and their soft limit
//   process_start_time_seconds       start time, seconds since the Unix epoch
//   kdns_build_info{program,version} 1, the running build (as Go's *_build_info)
//
// Written once here and registered by each program on its registry. The values are read
// from /proc at scrape time (the start time once, at registration), so nothing costs
// anything between scrapes. The parsers are pure, for tests.
//
// Thread: RegisterProcessMetrics() at start-up; the callbacks run on the scrape thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/metrics/registry.h"

namespace kdns::metrics {

// How the process_* series are named. kProgramLabel gives each a {program="<program>"}
// label: for a process whose metrics join another's scrape (the nanny's file, merged into
// frontend-cache's /metrics by text_merge.h), so the two processes' series stay apart.
enum class ProcessSeries : uint8_t { kUnlabelled, kProgramLabel };

void RegisterProcessMetrics(Registry& registry, std::string_view program,
                            ProcessSeries series = ProcessSeries::kUnlabelled);

// Field 22 of /proc/<pid>/stat (starttime, clock ticks after boot), or nullopt. The second
// field (comm) may hold spaces and parentheses: fields are counted after its last ')'.
std::optional<unsigned long long> ParseStatStartTicks(std::string_view stat);

// The "btime" line of /proc/stat (boot time, seconds since the Unix epoch), or nullopt.
std::optional<unsigned long long> ParseBootTime(std::string_view proc_stat);

// /proc/<pid>/statm's first two fields in pages: (virtual size, resident set), or nullopt.
std::optional<std::pair<unsigned long long, unsigned long long>> ParseStatm(std::string_view statm);

}  // namespace kdns::metrics

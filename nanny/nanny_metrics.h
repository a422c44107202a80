// NannyMetrics: the nanny's figures in the Prometheus text format, written (atomically) to
// the file frontend-cache appends to its /metrics (--metrics-textfile), so they reach
// Prometheus through the pod's existing scrape. Families (all kdns_nanny_*):
//   config_generation                      gauge: configurations applied to the child
//   config_info{version}                   gauge 1: version (hash) of the values applied last
//   config_last_applied_timestamp_seconds  gauge: when (Unix time)
//   config_error                           gauge: 1 while the newest values are rejected
//   config_updates_rejected_total          counter: invalid updates (each version once)
//   config_read_errors_total               counter: unreadable directory snapshots
//   child_restarts_total{reason}           counter: crash (died unasked) | config (restart
//                                          mode, to apply a configuration)
//   child_reloads_total                    counter: in-place reloads (SIGHUP)
//   stub_lookups_total{result}             counter: ok | failed host name lookups
//   stub_hosts_unresolved                  gauge: stub host names with no address known
// And in node-local mode NodeLocalMetrics (all kdns_nodelocal_*):
//   rules_ok                               gauge: 1 while every rule is in place (last check)
//   interface_ok                           gauge: 1 while the interface holds every -localip
//                                          address and is up (last check)
//   repairs_total{what}                    counter: rules | addresses found missing or
//                                          altered by the sync and put back
//   sync_errors_total                      counter: checks or repairs that failed
//   firewall_info{backend}                 gauge 1: nftables | iptables | none
//   tcp_migrate_req                        gauge: 1 when net.ipv4.tcp_migrate_req is on
//                                          (an update then resets no TCP connection)
// The Nanny writes its process_* and kdns_build_info after these (process_metrics.h, each
// series labelled program="nanny"); frontend-cache merges the file into its own families
// (text_merge.h).
//
// A plain value type; no thread affinity.
#pragma once

#include <cstdint>
#include <string>

namespace kdns::nanny {

struct NannyMetrics {
  uint64_t config_generation = 0;
  std::string config_version;
  double config_last_applied_unix_s = 0;
  bool config_error = false;
  uint64_t config_updates_rejected = 0;
  uint64_t config_read_errors = 0;
  uint64_t restarts_crash = 0;
  uint64_t restarts_config = 0;
  uint64_t reloads = 0;
  uint64_t stub_lookups_ok = 0;
  uint64_t stub_lookups_failed = 0;
  uint64_t stub_hosts_unresolved = 0;

  std::string Render() const;
};

struct NodeLocalMetrics {
  bool rules_ok = false;
  bool interface_ok = false;
  uint64_t rule_repairs = 0;
  uint64_t address_repairs = 0;
  uint64_t sync_errors = 0;
  std::string firewall_backend = "none";
  bool tcp_migrate_req = false;

  std::string Render() const;
};

}  // namespace kdns::nanny

// The /cache debugging endpoint: a JSON view of one snapshot of the record tree, bounded so
// that a cluster of 100k services cannot produce a response of hundreds of megabytes.
//
//   {"generation": 7, "synced": true,
//    "stats": {"services": 12, "endpoints": 1011, "reverse_entries": 30},
//    "truncated": false,
//    "services": [{"namespace": "default", "name": "kubernetes", "kind": "ClusterIP",
//                  "clusterIPs": ["10.96.0.1"], "hosts": [], "srv": ["_https._tcp:443"]}, ...],
//    "service_imports": [{"namespace": "shop", "name": "db", "kind": "Headless", "ips": [],
//                         "hosts": ["db-0.east 10.1.0.5"]}, ...],
//    "kubeslice_names": {"iperf-server.iperf.svc.slice.local": ["10.1.1.5"], ...}}
// (the multicluster zones; empty when they are off)
//
// At most `max_services` services (imports, names), and at most `max_hosts` hosts per
// service; "truncated"
// says when anything was left out. Pure: reads the immutable snapshot only.
#pragma once

#include <cstddef>
#include <string>

#include "kubedns/records/record_tree.h"

namespace kdns::kubedns {

std::string CacheJson(const Snapshot* snapshot, size_t max_services = 1000, size_t max_hosts = 100);

}  // namespace kdns::kubedns

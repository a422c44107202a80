// The SOA of a zone kubedns serves (the cluster zone, the multicluster zones): its timers,
// kube-dns's, and the record made from a zone's names and serial. Pure; any thread.
#pragma once

#include <cstdint>

#include "common/dns/name.h"
#include "common/dns/rdata.h"

namespace kdns::kubedns {

// The SOA timers: refresh, retry, expire, minimum (the negative TTL, RFC 2308 section 4).
struct SoaTimers {
  uint32_t refresh_s = 28800;
  uint32_t retry_s = 7200;
  uint32_t expire_s = 604800;
  uint32_t minimum_s = 60;
};

// A zone's SOA: its name server `mname`, its hostmaster `rname`, `serial` and the timers.
inline dns::RdataSoa ZoneSoa(const dns::Name& mname, const dns::Name& rname, uint32_t serial,
                             const SoaTimers& timers) {
  dns::RdataSoa soa;
  soa.mname = mname;
  soa.rname = rname;
  soa.serial = serial;
  soa.refresh_s = timers.refresh_s;
  soa.retry_s = timers.retry_s;
  soa.expire_s = timers.expire_s;
  soa.minimum_s = timers.minimum_s;
  return soa;
}

}  // namespace kdns::kubedns

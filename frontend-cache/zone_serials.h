// ZoneSerials: what keeps frontend-cache's negative answers for kubedns's zones exact
// (docs/design.md, "Negative answers without staleness"). kubedns's SOA serial changes
// whenever its records change; when a zone's serial changes, a name that did not exist may
// now, so the zone's cached negative answers (NXDOMAIN and NODATA) are dropped, and
// everything else is kept (positive answers live out their TTLs, as from any server).
//
// Two ways to learn of a change:
//   NOTIFY   kubedns sends one for each zone it serves (RFC 1996), from a source trusted
//            by --notify-from: Notified() drops the zone's negatives at once
//   the poll the DNS thread that owns the poll asks each --serial-zones zone for its SOA
//            every --serial-poll, but only while the cache holds negative answers (with
//            none there is nothing to make stale): SerialSeen() drops the zone's negatives
//            when the serial differs from the last one seen, or when none was seen yet (a
//            serial we cannot vouch for). So a lost NOTIFY costs at most one poll interval.
//
// Thread-safe: the serials are under a mutex (taken on a NOTIFY or a poll's answer, never
// on the query path); the cache is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "common/dns/name.h"
#include "frontend-cache/cache.h"

namespace kdns::frontend {

class ZoneSerials {
 public:
  // `cache` must outlive this. `zones` are --serial-zones, lower case.
  ZoneSerials(Cache& cache, std::vector<dns::Name> zones);

  // A trusted NOTIFY for `zone` (any zone: one not polled too). Drops the zone's negative
  // answers; returns how many. The serial a NOTIFY may carry is not taken as seen: the
  // next poll then drops once more, which also catches a negative answer made before the
  // change that reached the cache just after the NOTIFY.
  size_t Notified(const dns::Name& zone);
  // A poll found `zone`'s serial to be `serial`. Returns how many negatives were dropped.
  size_t SerialSeen(const dns::Name& zone, uint32_t serial);

  // The zones to ask for their SOA now: every --serial-zones zone while the cache holds
  // negative answers, else none.
  std::vector<dns::Name> ZonesToPoll() const;
  const std::vector<dns::Name>& zones() const { return zones_; }

  uint64_t notifies() const { return notifies_.load(std::memory_order_relaxed); }
  uint64_t serial_changes() const { return serial_changes_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  // Drops the zone's negatives and counts them.
  size_t Drop(const dns::Name& zone);

  Cache& cache_;
  const std::vector<dns::Name> zones_;
  mutable std::mutex mu_;
  std::vector<std::optional<uint32_t>> last_serial_;  // by zones_ index; under mu_
  std::atomic<uint64_t> notifies_{0};
  std::atomic<uint64_t> serial_changes_{0};  // polls that found a new (or a first) serial
  std::atomic<uint64_t> dropped_{0};         // negative entries dropped, by either way
};

}  // namespace kdns::frontend

#include "frontend-cache/zone_serials.h"

#include <glog/logging.h>

#include <utility>

namespace kdns::frontend {

ZoneSerials::ZoneSerials(Cache& cache, std::vector<dns::Name> zones)
    : cache_(cache), zones_(std::move(zones)), last_serial_(zones_.size()) {}

size_t ZoneSerials::Drop(const dns::Name& zone) {
  const size_t dropped = cache_.DropNegative(zone);
  dropped_.fetch_add(dropped, std::memory_order_relaxed);
  return dropped;
}

size_t ZoneSerials::Notified(const dns::Name& zone) {
  notifies_.fetch_add(1, std::memory_order_relaxed);
  const size_t dropped = Drop(zone);
  VLOG(1) << "NOTIFY for " << zone.ToText() << ": " << dropped << " negative answers dropped";
  return dropped;
}

size_t ZoneSerials::SerialSeen(const dns::Name& zone, uint32_t serial) {
  {
    std::lock_guard lock(mu_);
    bool changed = false;
    for (size_t i = 0; i < zones_.size(); ++i) {
      if (!(zones_[i] == zone) || last_serial_[i] == serial) continue;
      last_serial_[i] = serial;
      changed = true;
    }
    if (!changed) return 0;
  }
  serial_changes_.fetch_add(1, std::memory_order_relaxed);
  const size_t dropped = Drop(zone);
  VLOG(1) << zone.ToText() << " serial " << serial << ": " << dropped
          << " negative answers dropped";
  return dropped;
}

std::vector<dns::Name> ZoneSerials::ZonesToPoll() const {
  if (cache_.negatives() == 0) return {};
  return zones_;
}

}  // namespace kdns::frontend

// NotifySender: tells the caches in front of kubedns (--notify) that its records changed,
// with a DNS NOTIFY (RFC 1996) for each zone it serves, so that they drop the zones'
// cached negative answers (frontend-cache) and a Service created after a pod asked for it
// is not hidden behind a cached NXDOMAIN.
//
// The records' version (Snapshot::records_version, records/record_tree.h) is what the zones' SOA
// serial derives from; the sender looks at the published snapshot every kCheckIntervalMs
// and sends when that version differs from the last one it sent. So NOTIFYs are coalesced:
// at most one per zone and target per 100 ms, however fast the records change, and none
// while nothing changes (a re-LIST or reload that found everything as it was).
//
// Lost NOTIFYs are not retransmitted (RFC 1996 §3.6 asks for retries): a cache that
// negative-caches our zones also asks for their SOA on its own (frontend-cache
// --serial-poll), which bounds the staleness when a NOTIFY is lost; a NOTIFY only makes it
// shorter. Replies are read and discarded, so the socket's buffer never fills.
//
// Thread: the loop's (kubedns's source thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/snapshot_holder.h"
#include "common/base/unique_fd.h"
#include "common/dns/name.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"
#include "common/metrics/counter.h"
#include "common/metrics/registry.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/records/record_tree.h"

namespace kdns::kubedns {

class NotifySender {
 public:
  static constexpr uint64_t kCheckIntervalMs = 100;

  // `snapshots`, `answerer` and `registry` must outlive the sender; it registers
  // kdns_kubedns_notify_sent_total (datagrams sent) there.
  NotifySender(loop::Loop& loop, const SnapshotHolder<Snapshot>& snapshots,
               const Answerer& answerer, metrics::Registry& registry,
               std::vector<loop::SocketAddress> targets);
  NotifySender(const NotifySender&) = delete;
  NotifySender& operator=(const NotifySender&) = delete;

  // Opens the sending sockets and starts looking every kCheckIntervalMs. False with a
  // one-line *error when a socket cannot be opened.
  [[nodiscard]] bool Start(std::string* error);

  // One look: sends the NOTIFYs when the published records changed since the last sent.
  // Returns how many datagrams were sent (Start's timer calls it; tests call it directly).
  size_t CheckNow();

  uint64_t sent() const { return sent_.Value(); }

 private:
  int SocketFor(const loop::SocketAddress& target) const;
  void DrainReplies() const;

  const SnapshotHolder<Snapshot>& snapshots_;
  const Answerer& answerer_;
  const std::vector<loop::SocketAddress> targets_;
  const std::vector<dns::Name> zones_;
  loop::Timer timer_;
  std::optional<UniqueFd> v4_;  // opened by Start when a target needs it
  std::optional<UniqueFd> v6_;
  // The records version last announced; the first snapshot seen is announced too (the
  // caches may hold negatives from before a restart).
  uint64_t announced_version_ = 0;
  uint16_t next_id_ = 1;
  metrics::Counter& sent_;
};

}  // namespace kdns::kubedns

// UpstreamTable: what all Forwarders of a process share about upstream servers: per
// upstream statistics (for metrics and for dnsmasq's `servers.bind` CHAOS answer), the
// loop-detection state, and the registry of outstanding loop probes.
//
// Loop detection (`--dns-loop-detect`, as dnsmasq does it): the Forwarder sends each
// upstream a TXT query for a unique random name under `kdns-loop-check.`
// (Forwarder::ProbeForLoop, which registers it here). If that query comes back to us, the
// upstream forwards to us: a loop. The server that receives it (any thread) calls
// MatchLoopProbe(qname) for names under that suffix, answers REFUSED without forwarding,
// and calls Disable(upstream, reason); every Forwarder then skips the upstream for good
// (until the process is reconfigured). Disable logs once per upstream. Nothing here can
// crash on input: an unknown probe name is just not ours.
//
// Entries are created on first use and never removed, so references stay valid for the
// table's lifetime; the set of upstreams is small and configured.
//
// Thread-safe: counters are sharded atomics (metrics::Counter), loop state is atomic, and
// a mutex guards only the maps (first sight of an upstream, loop probes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/dns/name.h"
#include "common/loop/socket_address.h"
#include "common/metrics/counter.h"
#include "common/metrics/histogram.h"
#include "common/upstream/random.h"

namespace kdns::upstream {

// The suffix of loop-probe names.
inline constexpr std::string_view kLoopProbeSuffix = "kdns-loop-check.";

class UpstreamTable {
 public:
  // Outstanding loop probes remembered; the oldest is forgotten beyond this.
  static constexpr size_t kMaxLoopProbes = 1024;

  struct Entry {
    explicit Entry(const loop::SocketAddress& a);
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    const loop::SocketAddress address;
    metrics::Counter sent;           // queries sent, every try over UDP or TCP
    metrics::Counter failed;         // tries with no usable reply: timeouts, network errors,
                                     // SERVFAIL/REFUSED/NOTIMP/FORMERR replies
    metrics::Counter timeouts;       // of which timeouts
    metrics::Counter answers;        // replies handed to clients
    metrics::Histogram rtt_seconds;  // per reply received; 0.25 ms doubling to 8.192 s
    std::atomic<bool> loop_disabled{false};
  };

  UpstreamTable();
  UpstreamTable(const UpstreamTable&) = delete;
  UpstreamTable& operator=(const UpstreamTable&) = delete;

  // The entry for `address`, created on first use. The reference lives as long as the table.
  Entry& Get(const loop::SocketAddress& address);
  // Every entry, in order of first use.
  std::vector<const Entry*> Entries() const;

  // dnsmasq's `servers.bind` line for one upstream: `addr#port sent failed`.
  static std::string ServersBindText(const Entry& entry);

  // A fresh probe name `<16 hex digits>.kdns-loop-check.` remembered as a probe of `upstream`.
  dns::Name NewLoopProbe(const loop::SocketAddress& upstream, SecureRandom& random);
  // The upstream probed with `qname`, if it is one of our outstanding probes. Cheap (no
  // lock) for names not under kLoopProbeSuffix, so a server may call it for every query.
  std::optional<loop::SocketAddress> MatchLoopProbe(const dns::Name& qname) const;
  static bool IsLoopProbeName(const dns::Name& qname);

  // Marks `upstream` disabled because queries to it come back to us. Logs (once) and
  // returns true the first time.
  bool Disable(const loop::SocketAddress& upstream, std::string_view reason);
  bool IsDisabled(const loop::SocketAddress& upstream);
  // Forgets every loop verdict (a reconfiguration: the servers are probed again).
  void ClearLoopDisabled();

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;                   // Guarded by mu_.
  std::unordered_map<loop::SocketAddress, Entry*> by_address_;    // Guarded by mu_.
  std::deque<std::pair<dns::Name, loop::SocketAddress>> probes_;  // Guarded by mu_.
};

}  // namespace kdns::upstream

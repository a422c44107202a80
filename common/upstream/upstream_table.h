// UpstreamTable: what all Forwarders of a process share about upstream servers: per
// upstream statistics (for metrics and for dnsmasq's `servers.bind` CHAOS answer), the
// loop-detection state, and the registry of outstanding loop probes.
//
// Loop detection (`--dns-loop-detect`, as dnsmasq does it): the Forwarder sends each
// upstream a TXT query for a fresh random name under `kdns-loop-check.`
// (Forwarder::ProbeForLoop, which registers it here). If that query comes back to us, the
// upstream forwards to us: a loop. The server that receives it (any thread) calls
// MatchLoopProbe(qname, peer) for names under that suffix, answers REFUSED without
// forwarding, and on a match calls Disable(upstream, reason); every Forwarder then skips
// the upstream (until the process is reconfigured). Disable logs once per upstream.
//
// A probe name disables an upstream, so it is guarded like a credential (DESIGN §7): 64
// bits from the CSPRNG, single use, valid for kLoopProbeLifetimeMs, and accepted only from
// the upstream's side: the query must come from the upstream's own IP address or, when
// the upstream runs on this host, from one of this host's interface addresses (a local
// resolver on 127.0.0.53 forwarding to our pod IP sends from that IP). A pod that learns a
// name (it travels to the upstream, and kubedns forwards it further) and replays it from
// its own address gets REFUSED and disables nothing. dnsmasq checks none of this: its
// probe names live until the next reload and match from any source. The price: a loop
// whose last hop is another server (A forwards to B, B to us) is not blamed on A, which is
// right when A is innocent (kubedns, whose own upstream loops) and a missed detection when
// A's host sends from an address we cannot know. Every rejected probe is counted in
// kdns_limit_hits_total{limit="loop_probe_rejected"} and logged rate-limited.
//
// An entry is per Upstream: the same address over UDP and over tcp:// are two entries.
// Entries are created on first use and never removed, so references stay valid for the
// table's lifetime; the set of upstreams is small and configured.
//
// Thread-safe: counters are sharded atomics (metrics::Counter), loop state is atomic, and
// a mutex guards only the maps (first sight of an upstream, loop probes).
#pragma once

#include <array>
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

#include "common/base/clock.h"
#include "common/base/ip_address.h"
#include "common/dns/name.h"
#include "common/dns/types.h"
#include "common/loop/socket_address.h"
#include "common/metrics/counter.h"
#include "common/metrics/histogram.h"
#include "common/metrics/registry.h"
#include "common/upstream/random.h"
#include "common/upstream/upstream_address.h"

namespace kdns::upstream {

// The suffix of loop-probe names.
inline constexpr std::string_view kLoopProbeSuffix = "kdns-loop-check.";

class UpstreamTable {
 public:
  // Outstanding loop probes remembered; the oldest is forgotten beyond this.
  static constexpr size_t kMaxLoopProbes = 1024;
  // How long a loop probe is accepted after it was sent. A real loop brings it back within
  // the upstream's forwarding time (milliseconds); the Forwarder stops waiting for the
  // probe's own answer after its total_timeout_ms (5 s by default) as well.
  static constexpr uint64_t kLoopProbeLifetimeMs = 5'000;

  // The rcodes replies are counted by (Entry::replies), "other" after them.
  static constexpr std::array<dns::Rcode, 4> kReplyRcodes = {
      dns::Rcode::kNoError, dns::Rcode::kNxDomain, dns::Rcode::kServFail, dns::Rcode::kRefused};
  using ReplyCounters = std::array<metrics::Counter, kReplyRcodes.size() + 1>;
  // The index in ReplyCounters of `rcode`.
  static size_t ReplyRcodeIndex(dns::Rcode rcode);
  // Its label value: "NOERROR", ..., "other".
  static std::string ReplyRcodeName(size_t index);

  struct Entry {
    Entry(const Upstream& a, bool count_replies);
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    const Upstream address;
    metrics::Counter sent;      // queries sent, every try over UDP or TCP
    metrics::Counter failed;    // tries with no usable reply: timeouts, network errors,
                                // SERVFAIL/REFUSED/NOTIMP/FORMERR replies
    metrics::Counter timeouts;  // of which timeouts
    metrics::Counter answers;   // replies handed to clients
    metrics::Counter tls_handshake_failures;  // tls:// connections refused: certificate, name
    metrics::Counter tls_resumed;  // tls:// connections that resumed a session (loop/tls_session.h)
    metrics::Histogram rtt_seconds;  // per reply received; 0.25 ms doubling to 8.192 s
    // Health probes to it while failed that got no reply, and the times it was marked down
    // (its route's max_fails of them in a row; route_options.h).
    metrics::Counter health_check_failures;
    metrics::Counter marked_down;
    // Replies received to client queries, by rcode (ReplyRcodeIndex); only when the table
    // counts them (CountReplies, for --metrics-compat=coredns), else null, so the reply path
    // pays a null check for them.
    const std::unique_ptr<ReplyCounters> replies;
    std::atomic<bool> loop_disabled{false};
  };

  // `host_addresses`: this host's interface addresses (getifaddrs), for the loop-probe
  // source check; empty: only the upstream's own address is accepted.
  explicit UpstreamTable(std::vector<IpAddress> host_addresses = {},
                         const Clock& clock = SteadyClock::Instance());
  UpstreamTable(const UpstreamTable&) = delete;
  UpstreamTable& operator=(const UpstreamTable&) = delete;

  // The entry for `address`, created on first use. The reference lives as long as the table.
  Entry& Get(const Upstream& address);
  // Every entry, in order of first use.
  std::vector<const Entry*> Entries() const;
  // Count each entry's replies by rcode from now on; called at start-up, before the first
  // Get.
  void CountReplies() { count_replies_.store(true); }
  bool counts_replies() const { return count_replies_.load(); }

  // dnsmasq's `servers.bind` line for one upstream: `addr#port sent failed` (`tcp://addr#port
  // sent failed` for a tcp:// upstream).
  static std::string ServersBindText(const Entry& entry);

  // A fresh probe name `<16 hex digits>.kdns-loop-check.` remembered as a probe of `upstream`
  // for kLoopProbeLifetimeMs.
  dns::Name NewLoopProbe(const Upstream& upstream, SecureRandom& random);
  // The upstream probed with `qname` when it is one of our outstanding probes (sent less
  // than kLoopProbeLifetimeMs ago, not used yet) and `from`, the query's source, is that
  // upstream's side (see above); the probe is used up. Otherwise nullopt, and for a name
  // under kLoopProbeSuffix a kLoopProbeRejected hit (a wrong source leaves the probe valid,
  // so a replay cannot hide a real loop). Cheap (no lock) for names not under the suffix.
  std::optional<Upstream> MatchLoopProbe(const dns::Name& qname, const loop::SocketAddress& from);
  static bool IsLoopProbeName(const dns::Name& qname);

  // Marks `upstream` disabled because queries to it come back to us. Logs (once) and
  // returns true the first time.
  bool Disable(const Upstream& upstream, std::string_view reason);
  bool IsDisabled(const Upstream& upstream);
  // Forgets every loop verdict (a reconfiguration: the servers are probed again).
  void ClearLoopDisabled();

 private:
  struct LoopProbe {
    dns::Name name;
    Upstream upstream;
    uint64_t expires_ms;
  };

  // Whether a query from `from` may be `upstream` sending our probe back.
  bool FromUpstreamSide(const loop::SocketAddress& upstream, const loop::SocketAddress& from) const;
  void ForgetExpiredLoopProbes(uint64_t now_ms);  // mu_ held

  const std::vector<IpAddress> host_addresses_;
  const Clock& clock_;
  std::atomic<bool> count_replies_{false};
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;      // Guarded by mu_.
  std::unordered_map<Upstream, Entry*> by_address_;  // Guarded by mu_.
  std::deque<LoopProbe> probes_;  // Guarded by mu_. In the order sent (and of expiry).
};

// Registers every per-upstream family of the entries, read at scrape time, the same for
// each program that forwards (kdns_frontend_upstream, kdns_kubedns_upstream):
//   <prefix>_queries_total, _failures_total, _timeouts_total, _answers_total{upstream}
//   <prefix>_rtt_seconds{upstream}                        a histogram
//   <prefix>_tls_handshake_failures_total, _tls_resumed_total{upstream}   tls:// upstreams
//   <prefix>_health_check_failures_total, _marked_down_total{upstream}
//       (route_options.h: max_fails, health_check)
//   <prefix>_replies_total{upstream,rcode}     only for a table that counts them
void RegisterUpstreamMetrics(metrics::Registry& registry, const std::string& prefix,
                             std::shared_ptr<const UpstreamTable> table);

}  // namespace kdns::upstream

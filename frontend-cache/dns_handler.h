// DnsHandler: frontend-cache's QueryHandler, one per DNS thread, shaped like kubedns's
// (kubedns/serving/dns_handler.h). Every query reaches it admitted (common/server/admission.h:
// parsed; FORMERR, BADVERS, NOTIMP decided); it then decides (Decide, the same pure
// function on the receiver thread and the loop) in this order:
//
//   NOTIFY           (opcode NOTIFY, RFC 1996) from --notify-from: the zone's cached
//                    negative answers are dropped (zone_serials.h), NOERROR; from anyone
//                    else REFUSED (limit notify_untrusted)
//   CHAOS class      dnsmasq's statistics (chaos.h), never forwarded
//   a loop probe     REFUSED; when it is our own outstanding probe coming back from the
//                    side of the upstream it was sent to (upstream_table.h), that upstream
//                    forwards to us and is disabled
//   local answers    hosts files, --address, --filter-AAAA, --domain-needed, --bogus-priv
//                    (local_answers.h), answered from the published configuration
//   routing          --server=/domain/ with no upstream: NXDOMAIN (local) or REFUSED
//   the cache        a fresh entry answers at once (prefetching it when it is about to expire)
//   the upstreams    a miss waits (common/server/waiting_queries.h: what its reply needs,
//                    within the process-wide budget of waiting queries) while it is
//                    forwarded through the thread's upstream::Forwarder; the reply is cached
//                    and written for the client (cached_response.h), or on failure an
//                    expired entry is served stale (RFC 8767), else SERVFAIL
//
// Over a budget (the waiting queries', or the forwarder's: ForwardOutcome::kOverloaded) the query
// is answered at once the same way: stale if the cache still has the name, else SERVFAIL.
// A waiting query whose TCP client closes its connection is dropped then.
//
// With receiver threads, AnswerOnReceiverThread answers cache hits of plain forwarded
// queries on the socket's receiver thread and leaves the rest to HandleQuery: a miss with
// the decision to forward it on its route (server::Decision), which HandleQuery acts on
// without looking up the route, the local answers or the cache again; anything else
// undecided. The CHAOS, loop-probe and routing checks run there as well, on the thread's
// own routing reader.
//
// With --loadbalance=round_robin (the default, as dnsmasq's cache) a cache hit's A/AAAA
// RRsets are rotated in the client's copy (common/dns/loadbalance.h), a turn per hit on a
// counter of the answering thread's own, and so are local answers (hosts files,
// --address); off costs the hit one branch.
//
// With --log-queries every answer is written to the query log (common/server/query_log.h)
// with its source: local, cache, upstream or stale.
//
// Shared state is passed in explicitly (Shared): the cache, the published routing, the
// upstream table and metrics, all thread-safe. HandlerList knows the live handlers, so the
// server can send loop probes and poll serials from a serving thread; the forwarders'
// counters are summed in Shared::forwarder_totals (common/upstream/forwarder_totals.h).
//
// Thread: the DNS thread that created it (HandleQuery, the Forwarder's callbacks, tasks),
// except AnswerOnReceiverThread (its socket's receiver thread). Pending clients are answered
// SERVFAIL when it is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/base/clock.h"
#include "common/base/ip_prefix.h"
#include "common/base/snapshot_holder.h"
#include "common/dns/loadbalance.h"
#include "common/loop/task_queue.h"
#include "common/loop/timer.h"
#include "common/server/forwarding.h"
#include "common/server/query_handler.h"
#include "common/server/query_log.h"
#include "common/server/waiting_queries.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/upstream_set.h"
#include "common/upstream/upstream_table.h"
#include "frontend-cache/cache.h"
#include "frontend-cache/chaos.h"
#include "frontend-cache/local_answers.h"
#include "frontend-cache/metrics.h"
#include "frontend-cache/routing.h"
#include "frontend-cache/zone_serials.h"

namespace kdns::frontend {

// One routing configuration, as the DNS threads see it.
struct RoutingState {
  RoutingTable table;
  // The Forwarder's form of each route's upstreams: [i] for table.domain_routes()[i].
  std::vector<upstream::UpstreamSet> domain_sets;
  upstream::UpstreamSet default_set;
  // Hosts files, --address and the other local answers, built with this routing.
  LocalAnswers local;
  // Every upstream once, in the order dnsmasq lists them in servers.bind: the --server
  // options as given (command line, then --servers-file), then resolv.conf's.
  std::vector<upstream::Upstream> listing_order;
  uint64_t generation = 0;

  const upstream::UpstreamSet& SetFor(const Route& route) const;
};

class DnsHandler;

// What a forwarded miss keeps besides its Responder and ClientQuery (the cache key is
// computed again from the ClientQuery when the upstream answers): the routing it was
// forwarded under. Its answer is cached only while that routing is still the current one
// (see DnsHandler::Cacheable).
struct ForwardedMiss {
  uint64_t routing_generation = 0;
};

// The handlers alive, so the server can send loop probes and poll serials from a serving
// thread. Thread-safe.
class HandlerList {
 public:
  void Add(DnsHandler* handler);
  void Remove(DnsHandler* handler);
  // The handler of the calling thread, or nullptr (shutting down). Use it on that thread.
  DnsHandler* OnThisThread() const;

 private:
  mutable std::mutex mu_;
  std::vector<DnsHandler*> handlers_;  // Guarded by mu_; each used on its own thread.
};

class DnsHandler final : public server::QueryHandler,
                         private server::Forwarding<ForwardedMiss>::Policy {
 public:
  // Shared by the handlers of every thread; they outlive the handlers.
  struct Shared {
    Cache& cache;
    const CachePolicy& cache_policy;
    size_t cache_size;  // --cache-size, for CHAOS's cachesize.bind
    FrontendMetrics& metrics;
    SnapshotHolder<RoutingState>& routing;
    std::shared_ptr<upstream::UpstreamTable> upstream_table;
    upstream::Forwarder::Options forwarder;
    const Clock& clock;
    HandlerList& handlers;
    // Every thread's forwarder counters, summed for the metrics.
    upstream::ForwarderTotals& forwarder_totals;
    // The process's budget of waiting queries (--max-waiting-queries).
    std::shared_ptr<server::WaitingBudget> waiting;
    server::QueryLog& query_log;  // --log-queries
    bool filter_aaaa = false;     // --filter-AAAA: upstream replies lose their AAAA records
    // Exact negative caching (zone_serials.h): NOTIFY from these sources (--notify-from)
    // drops a zone's negative answers; the poll reports the serials it finds there.
    ZoneSerials& zone_serials;
    std::vector<IpPrefix> notify_from;
    // --loadbalance: cache hits rotate their A/AAAA RRsets (common/dns/loadbalance.h).
    dns::LoadBalance loadbalance = dns::LoadBalance::kOff;
  };

  DnsHandler(const server::ThreadContext& context, const Shared& shared);
  ~DnsHandler() override;
  DnsHandler(const DnsHandler&) = delete;
  DnsHandler& operator=(const DnsHandler&) = delete;

  void HandleQuery(server::Request& request) override;
  void OnConnectionClosed(uint64_t connection_id) override;
  // As an upstream timeout: stale if cached, else SERVFAIL.
  void OnQueriesOverdue(uint64_t connection_id) override;
  // Cache hits of plain queries; a miss goes to HandleQuery decided (forward on its route),
  // everything else undecided.
  size_t AnswerOnReceiverThread(const server::Admission& admission,
                                std::span<const uint8_t> query_bytes,
                                const loop::SocketAddress& peer, std::span<uint8_t> out,
                                server::Decision* decision) override;
  // Idle threads let go of their routing snapshots, so a replaced one is freed.
  void ReleaseSnapshots() override { routing_.Release(); }
  void ReleaseReceiverSnapshots() override { receiver_routing_.Release(); }

  upstream::Forwarder& forwarder() { return forwarding_.forwarder(); }
  // Asks each zone ZoneSerials::ZonesToPoll names for its SOA every interval_ms, through
  // this thread's Forwarder (one thread does it for the process). Call on the thread.
  void StartSerialPoll(uint64_t interval_ms);
  size_t waiting() const { return forwarding_.waiting(); }
  // The serving thread (handlers are made on it).
  std::thread::id thread() const { return thread_; }

 private:
  // When the handler was given a query (the client latency histogram and the query log's
  // duration both count from it), and whether the query log samples the query.
  using Start = server::AnswerStart;

  // What this handler decides for an admitted query from what it holds (the routing, its
  // local answers, the cache), without I/O: the one decision, made the same way on the
  // receiver thread and on the loop. Nothing is counted or sent here, except that the cache
  // lookup counts its hit or miss: the thread that acts on it does the rest.
  struct Decided {
    enum class Kind : uint8_t {
      kChaos,      // class CH: dnsmasq's statistics
      kLoopProbe,  // a name under our loop probes: REFUSED, never forwarded
      kLocal,      // `local` answers it (hosts files, --address, --filter-AAAA, ...)
      kNxDomain,   // --server=/domain/ with no upstream: NXDOMAIN
      kRefused,    // no upstream for it at all: REFUSED
      kHit,        // the cache answered: `hit`, written into the caller's buffer
      kForward,    // a miss on `route`
    };
    Kind kind = Kind::kForward;
    const Route* route = nullptr;  // of the routing Decide was given (but for kChaos, kLoopProbe)
    LocalAnswer local;
    LookupResult hit;
  };
  // `key` is the query's (CacheKey::FromQuery), made by the caller once: a hit's and a
  // miss's, which are nearly every query.
  Decided Decide(const dns::Query& query, const CacheKey& key, const RoutingState& routing,
                 std::span<uint8_t> out, size_t limit);

  // `reply` as the client and the cache get it: without AAAA records under --filter-AAAA
  // (then a view of filtered_, valid until the next call).
  std::span<const uint8_t> Filtered(std::span<const uint8_t> reply);

  // Every answer, on either thread and from either path, is amended and counted here: a
  // cached or forwarded NXDOMAIN for a name the local answers know becomes NOERROR
  // (LocalAnswers::ClearNxDomainOfKnownName); the answer is counted by type, rcode and,
  // with its time since `start`, by `source`.
  void Counted(const LocalAnswers& local, const dns::Query& query, std::span<uint8_t> response,
               server::AnswerSource source, const Start& start);
  // Counted, then logged when `start.logged`: the answers this handler sends itself (the
  // forwarded ones leave through forwarding_). Returns `response`.
  std::span<const uint8_t> Served(const LocalAnswers& local, const loop::SocketAddress& client,
                                  dns::Transport transport, const dns::Query& query,
                                  std::span<uint8_t> response, server::AnswerSource source,
                                  const Start& start);
  // Served, then sent. `to` is the Request (answered now, the common case: no Responder is
  // moved) or a kept Responder (answered later).
  template <class To>
  void Reply(To& to, const dns::Query& query, std::span<uint8_t> response,
             server::AnswerSource source, const Start& start);
  // A miss on `upstreams` (of `routing`): waits for the upstream's answer (forwarding_).
  // --loadbalance=round_robin: rotates `answer`'s A/AAAA RRsets a turn; off: nothing.
  void Balance(std::span<uint8_t> answer) const;
  void Forward(server::Request& request, const RoutingState& routing,
               const upstream::UpstreamSet& upstreams, const Start& start);
  template <class To>
  void ReplyEmpty(To& to, const dns::Query& query, dns::Rcode rcode, server::AnswerSource source,
                  const Start& start, bool aa = false);
  void Prefetch(const dns::Query& query, const CacheKey& key,
                const upstream::UpstreamSet& upstreams, uint64_t routing_generation);

  // server::Forwarding's Policy: a forwarded miss's answer is cached (while its routing is
  // current) and written with capped, aged TTLs (cached_response.h); when no answer comes
  // (every upstream failed, a budget spent, the client's TCP connection overdue), an
  // expired entry is served if the cache still has one (RFC 8767), else SERVFAIL, counted
  // by reason.
  std::span<uint8_t> FitAnswer(const dns::Query& query, size_t limit, ForwardedMiss& miss,
                               const upstream::Result& result, std::span<uint8_t> out) override;
  server::FailureAnswer AnswerInstead(const dns::Query& query, size_t limit,
                                      upstream::ForwardFailure failure,
                                      std::span<uint8_t> out) override;
  void Sending(const server::SentAnswer& answer, const ForwardedMiss& miss) override;
  // A reload flushes the domains whose route changed right after publishing the new
  // routing; an answer to a query forwarded before that (the old route's upstream) must
  // not refill the flushed cache, or it would be served for a whole TTL after the change.
  bool Cacheable(uint64_t routing_generation);
  ChaosStats ChaosStatsNow() const;
  // A NOTIFY (kNotImp for admission, which admits QUERY only): see the header comment.
  void HandleNotify(server::Request& request, const Start& start);
  // One round of the serial poll (StartSerialPoll).
  void PollSerials();

  const Shared& shared_;
  const server::ThreadContext& context_;
  const std::thread::id thread_;
  SnapshotHolder<RoutingState>::Reader routing_;
  // The receiver thread's own reader (a Reader is not shared between threads).
  SnapshotHolder<RoutingState>::Reader receiver_routing_;
  std::vector<uint8_t> scratch_;
  std::vector<uint16_t> ttl_offsets_;
  std::vector<uint8_t> filtered_;  // Filtered()'s reply
  // The misses waiting for upstreams, and the thread's Forwarder. Destroyed before
  // everything but tasks_, so no callback can reach what it uses once it is gone.
  server::Forwarding<ForwardedMiss> forwarding_;
  // StartSerialPoll's timer (null on every other thread); before forwarding_ goes.
  std::unique_ptr<loop::Timer> serial_poll_;
  // Prefetches asked for on the receiver thread run here. Last: destroyed first, dropping
  // any task not run yet.
  loop::TaskQueue tasks_;
};

}  // namespace kdns::frontend

// Forwarder: the upstream forwarding client shared by frontend-cache and kubedns. One per
// loop thread; nothing on the query path takes a lock. The caller routes (picks the
// UpstreamSet for a name) and answers the client; the Forwarder gets an answer from one
// of the set's servers or says why it could not.
//
// Life of a query (Resolve):
//   1. Identical in-flight queries (same name ignoring case, type, class, DO, CD and set)
//      are coalesced: they wait for the one upstream query already under way, at most
//      Options::max_waiters_per_query of them (beyond: kOverloaded, kWaitersPerQuery).
//   2. Servers known down (upstream_health.h: failed, and a background probe went
//      unanswered) are left out; when that leaves none, the query fails at once
//      (kServFail, kUpstreamDown) instead of holding its budgets for total_timeout_ms.
//   3. Budgets (Options::budgets, forward_budgets.h, shared by every thread): the route's
//      (the set's), the process ceiling, and each server's, taken at its first try. The
//      route's and the servers' are taken for Request::client, whose fair share they keep:
//      in a budget's reserve, a client holding at least the average is refused
//      (Limit::kRouteClientShare, kUpstreamClientShare). Over any budget the query fails
//      at once with kOverloaded and the FailReason naming the budget (the caller serves
//      stale or answers SERVFAIL): no queue. A server over its budget is skipped for
//      another of the set. Every slot is given back when the query ends, whatever ends it.
//   4. The set's servers are ordered: healthy ones by smoothed RTT (never-measured ones
//      count as 0, ties keep the configured order), or in the configured order with
//      ServerOrder::kConfigured (dnsmasq's --strict-order), or by the route's policy
//      (route_options.h: random, round_robin, sequential), then failed ones; loop-disabled
//      ones are left out. Each try goes to the next server in that order, round robin, at most
//      max_tries_per_upstream tries each, within total_timeout_ms. With
//      FirstTry::kAllServers (dnsmasq's --all-servers) the first try goes to every one of
//      them at once.
//   5. A UDP try goes out on one of the server's pooled sockets (udp_socket_pool.h: random
//      ephemeral ports, connect()ed to the server, picked at random, rotated after
//      Options::udp_sockets.queries_per_socket queries) with a random ID from the kernel's
//      CSPRNG, unique on that socket, and the name in random case (0x20, dns0x20.h:
//      Options::dns0x20; not for a server known not to echo it). A client that came over
//      TCP is forwarded over TCP, and a tcp:// upstream (UpstreamTransport::kTcp) is asked
//      over TCP only (so is every upstream of a force_tcp route; a prefer_udp route's
//      client TCP queries go over UDP), with the client's spelling: on the server's
//      persistent connections
//      (RFC 7766 §6.2.1: pipelined, replies in any order matched by ID), at most
//      Options::tcp_connections_per_upstream of them; a new one opens only when each open
//      one has Options::tcp_queries_per_connection queries in flight, and one unused for
//      tcp_idle_timeout_ms closes. A tls:// upstream (kTls) is asked the same way inside TLS
//      (tcp_client.h; Options::tls_context verifies it); a failed handshake fails the try,
//      is counted (UpstreamTable::Entry::tls_handshake_failures), and for a health probe
//      counts as its timeout. Every query carries EDNS0 (payload
//      Options::edns_payload_bytes, the client's DO bit) and the client's CD; a query to a
//      server in Options::client_address_to also carries Request::client (the first
//      asker's, for coalesced queries) in the client-address option.
//   6. A reply counts only if it matches (wire.h: source, ID, QR, question, and the case
//      sent); others are dropped and counted, and the try keeps waiting. A reply in the
//      wrong case from a server not known to echo it sends the try again at once with the
//      client's spelling; after a few in a row the server gets no 0x20 for a while. A
//      matching reply gets the client's spelling back (Restore0x20) and its records are
//      decoded into Result::message, or only walked (Options::reply_decode). A try whose
//      timeout (RFC 6298 RTO from the server's SRTT, see upstream_health.h) expires moves
//      the query on to the next server, but its socket keeps listening: a late answer
//      still wins.
//   7. TC over UDP: the same server again over TCP. A TCP connection that closes under
//      queries (RFC 7766 §6.2.3: the server may close it): each query on it that is the
//      job's current try is sent once more on a fresh connection if this one had answered
//      before (a reused connection closed by the server); otherwise it fails over to the
//      next server. FORMERR to a query with EDNS: the same
//      server once more without EDNS (RFC 6891 §7). SERVFAIL, REFUSED, NOTIMP (and FORMERR
//      without EDNS): the next server. Anything else (NOERROR, NXDOMAIN, ...) is the answer.
//   8. Timeouts and network errors count against the server; failure_threshold in a row
//      mark it failed, and a background probe (probe_name/probe_type every
//      probe_interval_ms, or the route's health_check) restores it as soon as it answers;
//      max_fails probes in a row that get no reply (1 unless the route says otherwise) mark
//      it down (step 2) until one does. max_fails=0 (CoreDNS's meaning): never down and never
//      probed; the first reply to a client query restores it.
//
// The callback is called exactly once per Resolve, never from inside Resolve (results
// known at once are delivered on the next loop iteration), with a Result shared by all
// coalesced waiters. It may call Resolve again; it must not destroy the Forwarder.
// Destroying the Forwarder drops pending callbacks without calling them; call CancelAll()
// first to have them answered with kServFail/kShutdown.
//
// Usage (frontend-cache's DnsHandler on a cache miss: the client's query waits in its
// server::WaitingQueries under `id`, and the result completes it there):
//   forwarder.Resolve(upstream::Request::FromQuery(query, dns::Transport::kUdp, client),
//                     upstreams, [this, id](const upstream::Result& result) {
//                       // kAnswer: result.reply, rewritten for the client
//                       // (RewriteForClient); else stale or SERVFAIL.
//                       Complete(id, result);
//                     });
//
// Thread: the loop's thread only; counters() may be read from any thread. The
// UpstreamTable may be shared with the Forwarders of other threads.
//
// The implementation is split by concept: forwarder.cc (the job table: coalescing, the
// budgets, completion), forwarder_tries.cc (server order, sending, failover),
// forwarder_replies.cc (reply matching and rcodes), forwarder_probes.cc (loop and health
// probes); forwarder_internal.h holds the private state types.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/base/clock.h"
#include "common/base/ip_prefix.h"
#include "common/dns/client_address.h"
#include "common/dns/edns.h"
#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"
#include "common/loop/tls_session.h"
#include "common/loop/udp_batch.h"
#include "common/upstream/dns0x20.h"
#include "common/upstream/forward_budgets.h"
#include "common/upstream/forward_outcome.h"
#include "common/upstream/random.h"
#include "common/upstream/tcp_client.h"
#include "common/upstream/udp_socket_pool.h"
#include "common/upstream/upstream_health.h"
#include "common/upstream/upstream_set.h"
#include "common/upstream/upstream_table.h"
#include "common/upstream/wire.h"

namespace kdns::upstream {

// Which of a set's healthy servers is asked first.
enum class ServerOrder : uint8_t {
  kFastest,     // the lowest smoothed RTT
  kConfigured,  // the order the set lists them in (dnsmasq's --strict-order)
};
// How many servers a client query's first try goes to.
enum class FirstTry : uint8_t {
  kOneServer,   // the first in order; the next after a timeout or a failure
  kAllServers,  // every usable server at once, the first answer wins (dnsmasq's
                // --all-servers); later tries go one at a time
};
struct Result {
  ForwardOutcome outcome = ForwardOutcome::kServFail;
  FailReason reason = FailReason::kNone;
  // The reply as received (the upstream's ID and name case; see RewriteForClient) and its
  // parse (whole, or header, question and EDNS only: Options::reply_decode). kAnswer:
  // always set. kServFail/kUpstreamError: the last error reply.
  std::vector<uint8_t> reply;
  dns::Message message;
  loop::SocketAddress upstream;  // who sent `reply`
  dns::Transport transport = dns::Transport::kUdp;
  uint64_t rtt_ms = 0;
  uint32_t tries = 0;  // upstream queries sent, TCP and EDNS retries included
};

// Forwarder-wide counters; any thread may read them.
struct ForwarderCounters {
  std::atomic<uint64_t> requests{0};         // Resolve calls
  std::atomic<uint64_t> coalesced{0};        // joined an identical query in flight
  std::atomic<uint64_t> overloaded{0};       // kOverloaded results: over a budget
  std::atomic<uint64_t> upstream_down{0};    // failed at once: every server known down
  std::atomic<uint64_t> answers{0};          // kAnswer results (per upstream query)
  std::atomic<uint64_t> servfails{0};        // kServFail results (per upstream query)
  std::atomic<uint64_t> tries{0};            // upstream queries sent
  std::atomic<uint64_t> timeouts{0};         // tries that timed out
  std::atomic<uint64_t> failovers{0};        // tries sent to another server after a failure
  std::atomic<uint64_t> mismatched{0};       // replies dropped: wrong ID, question or QR
  std::atomic<uint64_t> malformed{0};        // replies dropped: not parseable
  std::atomic<uint64_t> tcp_retries{0};      // truncated UDP replies retried over TCP
  std::atomic<uint64_t> edns_fallbacks{0};   // FORMERR to EDNS, retried without
  std::atomic<uint64_t> tcp_connections{0};  // connections opened
  std::atomic<uint64_t> in_flight{0};        // distinct upstream queries now (a gauge)
};

class Forwarder {
 public:
  struct Options {
    ServerOrder server_order = ServerOrder::kFastest;
    FirstTry first_try = FirstTry::kOneServer;
    uint64_t min_try_timeout_ms = 100;
    uint64_t max_try_timeout_ms = 1500;  // also the first try to a server never measured
    uint64_t total_timeout_ms = 5000;
    uint32_t max_tries_per_upstream = 2;
    uint32_t failure_threshold = 3;
    // The in-flight budgets of the process, shared by the Forwarder of every serving
    // thread; when null, this Forwarder makes its own (ForwardBudgets' defaults).
    std::shared_ptr<ForwardBudgets> budgets;
    size_t max_waiters_per_query = 1024;
    uint16_t edns_payload_bytes = dns::kDefaultUdpPayloadSize;
    // The servers trusted with the client's address (frontend-cache: kubedns, on
    // loopback): a query to one of them carries Request::client in the client-address
    // option of code client_address_option (dns/client_address.h); to any other server it
    // never does, so no pod address leaves for an external upstream. Empty: none.
    std::vector<IpPrefix> client_address_to;
    uint16_t client_address_option = dns::kDefaultClientAddressOption;
    // TCP to each server (client TCP queries, TC retries, tcp:// upstreams): connections
    // close after this long unused; at most tcp_connections_per_upstream per server, a new
    // one opened only when each open one has tcp_queries_per_connection in flight (beyond:
    // pipelined on the least busy one).
    uint64_t tcp_idle_timeout_ms = 10'000;
    size_t tcp_connections_per_upstream = 4;
    size_t tcp_queries_per_connection = 32;
    // The trust store of tls:// upstreams (--tls-ca-file or the system's CA bundle); null:
    // a tls:// upstream fails every try (never asked in the clear).
    std::shared_ptr<const loop::TlsContext> tls_context;
    // Per server: how many UDP sockets, and how long each is used (source-port rotation).
    UdpSocketPool::Options udp_sockets;
    // Random case in the names of UDP client queries, and the fallback for upstreams that
    // do not echo it (dns0x20.h; --upstream-0x20).
    Echo0x20::Options dns0x20;
    // How much of a reply Result::message holds (wire.h): kQuestion for a caller that uses
    // the bytes only, so a large reply costs no decoded records.
    ReplyDecode reply_decode = ReplyDecode::kWhole;
    uint64_t probe_interval_ms = 5'000;
    dns::Name probe_name = dns::Name::Root();  // ". NS" by default
    dns::RrType probe_type = dns::RrType::kNs;
  };
  using Callback = std::function<void(const Result& result)>;

  // `table` may be shared with the Forwarders of other threads; one is made if null.
  Forwarder(loop::Loop& loop, const Options& options,
            std::shared_ptr<UpstreamTable> table = nullptr,
            const Clock& clock = SteadyClock::Instance());
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  void Resolve(const Request& request, const UpstreamSet& upstreams, Callback callback);

  // Loop detection: sends `upstream` a TXT query for a fresh name registered in the table
  // and returns the name. See upstream_table.h for the receiving side.
  dns::Name ProbeForLoop(const Upstream& upstream);

  // Completes every pending query with kServFail/kShutdown (callbacks run inside).
  void CancelAll();

  const ForwarderCounters& counters() const { return counters_; }
  UpstreamTable& table() { return *table_; }
  const std::shared_ptr<UpstreamTable>& shared_table() const { return table_; }
  // What this Forwarder knows about `upstream`; nullptr before its first use.
  const UpstreamHealth* health(const Upstream& upstream) const;
  size_t in_flight() const { return client_jobs_; }
  // TCP connections open (or opening) to every server.
  size_t open_tcp_connections() const;
  // Finished jobs kept for reuse (tests).
  size_t reusable_jobs() const { return free_jobs_.size(); }

 private:
  struct Job;
  struct Attempt;
  struct Server;
  struct TcpSlot;
  enum class JobKind : uint8_t { kClient, kHealthProbe, kLoopProbe };

  Server& GetServer(const Upstream& upstream);
  InFlightBudget& RouteBudget(const UpstreamSet& upstreams);
  Job* StartJob(JobKind kind, const Request& request, const std::vector<Server*>& candidates);
  // Finished jobs and their attempts are reset and kept for the next queries (up to
  // kMaxFreeJobs), so the steady miss path allocates no Job, Attempt, timer or vector.
  void Recycle(std::unique_ptr<Job> job);
  Attempt* NewAttempt(Job* job);
  // Coalescing: client jobs by (name ignoring case, type, class, DO, CD, set), in a table
  // chained through the jobs themselves (no node or key copy per query).
  static size_t KeyHash(const Request& request, const UpstreamSet& upstreams);
  Job* FindCoalesced(size_t hash, const Request& request, const UpstreamSet& upstreams) const;
  void AddCoalesced(Job* job, size_t hash, const UpstreamSet& upstreams);
  void RemoveCoalesced(Job* job);
  void StartNextTry(Job* job);
  void SendTry(Job* job, size_t candidate, dns::Transport transport, EdnsMode edns);
  void SendUdp(Attempt* attempt, std::span<const uint8_t> query);
  // The connection of `server` a TCP try goes on (opened here when needed); nullptr when
  // none can be opened.
  TcpSlot* PickTcpSlot(Server* server);
  void SendTcp(Attempt* attempt, TcpSlot* slot, std::span<const uint8_t> query);
  void OnTryTimeout(Job* job);
  void OnDatagram(Attempt* attempt, std::span<const uint8_t> datagram);
  // A reply with our ID and question in another case than sent (0x20): dropped as a spoof,
  // or the try sent again with the client's spelling (dns0x20.h, Echo0x20).
  void OnWrongCase(Attempt* attempt);
  void OnTcpMessage(TcpSlot* slot, std::span<const uint8_t> message);
  void OnTcpClosed(TcpSlot* slot, const std::string& reason);
  // `message` is reply_message_: taken by swapping (the caller's scratch gets the old one).
  void OnReply(Attempt* attempt, std::span<const uint8_t> bytes, dns::Message& message);
  void OnAttemptFailed(Attempt* attempt, bool timeout, const char* why);
  // A try without a reply counts against the server; a health probe's timing out marks it
  // down.
  void OnServerFailure(Job* job, Server* server, bool timeout);
  void CloseAttempt(Attempt* attempt);
  void FinishAnswer(Job* job, Attempt* attempt, std::span<const uint8_t> bytes,
                    dns::Message& message);
  void FinishFailed(Job* job, FailReason reason);
  // Delivers job->result, which FinishAnswer/FinishFailed filled.
  void Finish(Job* job);
  void Deliver(std::vector<Callback> waiters, std::shared_ptr<const Result> result);
  void SchedulePost();
  void RunPosted();
  // Failed, health-checked (max_fails > 0) and not disabled by loop detection.
  static bool WantsProbe(const Server& server);
  void ProbeFailedServers();
  void UpdateProbeTimer();
  // A route's max_fails and health_check onto `server` (route_options.h), or the defaults
  // for a route without them after one with them.
  void ApplyHealthOptions(Server& server, const RouteOptions& options);
  // `candidates` (healthy ones first) in the order of `policy`: random, round_robin (by
  // the set's own counter), sequential.
  void OrderByPolicy(const UpstreamSet& upstreams, std::vector<Server*>& candidates);

  loop::Loop& loop_;
  Options options_;
  std::shared_ptr<UpstreamTable> table_;
  std::shared_ptr<ForwardBudgets> budgets_;
  // This thread's references to the route budgets it has used (no lock per query).
  std::unordered_map<UpstreamSet, InFlightBudget*, UpstreamSetHash> route_budgets_;
  const Clock& clock_;
  SecureRandom random_;
  ForwarderCounters counters_;
  // Shared by every UDP socket of this Forwarder: up to kReceiveSlices replies per recvmmsg.
  // Not zeroed, so only the pages replies land in become resident.
  static constexpr size_t kReceiveSlices = 8;
  loop::internal::UdpReceiveBatch receive_;
  std::vector<uint8_t> query_;       // the query being sent (BuildQuery reuses it)
  std::vector<uint8_t> reply_0x20_;  // a 0x20 reply with the client's spelling put back
  // The reply being matched; swapped with the job's on a match, so the two trade capacity
  // instead of allocating.
  dns::Message reply_message_;

  std::unordered_map<Upstream, std::unique_ptr<Server>> servers_;
  std::vector<std::unique_ptr<Job>> jobs_;  // under way; Job::index is the position
  std::vector<Job*> coalesce_;              // buckets (a power of two), chained
  size_t coalesced_jobs_ = 0;
  std::vector<Server*> candidates_;  // Resolve's scratch
  std::vector<std::unique_ptr<Job>> free_jobs_;
  std::vector<std::unique_ptr<Attempt>> free_attempts_;
  size_t client_jobs_ = 0;

  // Finished jobs and closed connections, destroyed on the next loop iteration (they may
  // be finished from inside their own callbacks); results to deliver outside Resolve.
  std::vector<std::unique_ptr<Job>> graveyard_;
  std::vector<std::unique_ptr<TcpSlot>> closed_tcp_;
  std::vector<std::pair<std::vector<Callback>, std::shared_ptr<const Result>>> deferred_;
  int resolve_depth_ = 0;
  loop::Timer post_timer_;
  loop::Timer probe_timer_;
  uint64_t probe_timer_interval_ms_ = 0;  // while probe_timer_ runs
  // round_robin routes: where each set's next query starts.
  std::unordered_map<UpstreamSet, uint32_t, UpstreamSetHash> round_robin_next_;
};

}  // namespace kdns::upstream

// The Forwarder's private state types (forwarder.h declares them): a Server (what one
// Forwarder knows of one upstream), an Attempt (one query sent to one server), a Job (one
// upstream query and its waiters) and a TcpSlot (one of a server's reused connections). Only the
// forwarder*.cc files include this. Owned by their Forwarder; its loop's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/upstream/dns0x20.h"
#include "common/upstream/forwarder.h"
#include "common/upstream/udp_socket_pool.h"

namespace kdns::upstream {

// What this Forwarder knows about one upstream server.
struct Forwarder::Server {
  Server(const Upstream& u, const UpstreamHealth::Options& o, const Echo0x20::Options& c,
         UpstreamTable::Entry& e, InFlightBudget& b)
      : address(u.address),
        transport(u.transport),
        server_name(u.server_name),
        health(o),
        echo_0x20(c),
        entry(e),
        budget(b) {}
  loop::SocketAddress address;
  UpstreamTransport transport;  // kTcp, kTls: every try over TCP, or TLS
  std::string server_name;      // kTls: the name its certificate must carry (upstream_address.h)
  UpstreamHealth health;
  Echo0x20 echo_0x20;  // whether it echoes random case (dns0x20.h)
  UpstreamTable::Entry& entry;
  InFlightBudget& budget;  // shared by every thread's Forwarder
  // In Options::client_address_to: its queries carry the client's address.
  bool gets_client_address = false;
  bool probing = false;                // a health probe is outstanding
  std::unique_ptr<UdpSocketPool> udp;  // the UDP tries' sockets
  // The TCP tries' connections (Options::tcp_connections_per_upstream at most), open or
  // opening; one leaves when it closes.
  std::vector<std::unique_ptr<TcpSlot>> tcp;
  // Health probes while failed: every probe_interval_ms (a route's health_check, else
  // Options::probe_interval_ms), the next one due at next_probe_ms (loop time).
  uint64_t probe_interval_ms = 0;
  uint64_t next_probe_ms = 0;
  // The last route that used it set max_fails or health_check: a route without them puts
  // the defaults back (a reload that removes them).
  bool route_health = false;
};

// One query sent to one server. Waiter::id is its query ID on either transport; over UDP it
// waits in its server's UdpSocketPool (Waiter::socket, which drew the ID) from the send until
// CloseAttempt.
struct Forwarder::Attempt : UdpSocketPool::Waiter {
  Job* job = nullptr;
  Server* server = nullptr;
  size_t candidate = 0;
  dns::Transport transport = dns::Transport::kUdp;
  EdnsMode edns = EdnsMode::kWithEdns;
  uint64_t sent_ms = 0;
  bool closed = false;     // answered, failed or superseded: ignore what still arrives
  TcpSlot* tcp = nullptr;  // registered there under `id` while open
  bool sent_0x20 = false;  // sent with qname_0x20 (UDP client queries only, dns0x20.h)
  dns::Name qname_0x20;    // the name in the random case it was sent with
};

// One upstream query under way, with everyone waiting for it.
// Reused (Forwarder::Recycle): every field is reset there, so add new ones to Reset().
struct Forwarder::Job {
  explicit Job(loop::Loop& loop) : try_timer(loop), deadline_timer(loop) {}
  // Back to a fresh job, keeping the vectors' capacity; attempts go to `free_attempts`.
  void Reset(std::vector<std::unique_ptr<Attempt>>& free_attempts, size_t max_free_attempts);
  JobKind kind = JobKind::kClient;
  size_t index = 0;  // in Forwarder::jobs_ while under way
  // Coalescable (client) jobs: in Forwarder::coalesce_ under key_hash until finished; the key
  // is the request's question and DO/CD bits and `upstreams`.
  bool coalescable = false;
  size_t key_hash = 0;
  UpstreamSet upstreams;
  Job* next_coalesced = nullptr;
  Request request;
  std::vector<Server*> candidates;
  std::vector<uint32_t> tries;  // per candidate
  std::vector<bool> done;       // per candidate: replied with an error, or refused us
  std::vector<bool> no_edns;    // per candidate: FORMERR to EDNS seen
  std::vector<bool> no_0x20;    // per candidate: a reply in the wrong case seen, asked again
                                // with the client's spelling (dns0x20.h)
  // Client jobs: the slots held until the job ends (forward_budgets.h), for `client` (the
  // client that started the job; coalesced waiters take no slot). Per candidate: the
  // server's, taken at the first try to it.
  ClientTag client = kNoClient;
  BudgetHold route_hold;
  BudgetHold process_hold;
  std::vector<BudgetHold> upstream_holds;
  bool upstream_refused = false;  // a server was skipped: over its budget
  size_t next_candidate = 0;
  bool force_tcp = false;
  bool tcp_reconnected = false;  // one retry after a reused connection closed under us
  std::vector<std::unique_ptr<Attempt>> attempts;
  Attempt* current = nullptr;
  std::vector<Callback> waiters;
  uint64_t deadline_ms = 0;  // loop time
  uint32_t sent = 0;
  bool any_timeout = false;
  bool finished = false;
  // The last error reply (SERVFAIL, REFUSED...), reported if nothing better comes.
  std::vector<uint8_t> error_reply;
  dns::Message error_message;
  Attempt* error_attempt = nullptr;
  Result result;  // filled when the job ends, delivered from here
  loop::Timer try_timer;
  loop::Timer deadline_timer;
};

// One reused TCP connection to a server, and the tries waiting on it by ID (unique on it).
struct Forwarder::TcpSlot {
  Server* server = nullptr;
  std::unique_ptr<TcpClient> client;
  std::unordered_map<uint16_t, Attempt*> waiting;
  bool answered = false;  // a reply came: a tls:// connection's handshake is counted
};

}  // namespace kdns::upstream

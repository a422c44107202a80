#include "common/server/loop_server.h"

#include <glog/logging.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <exception>
#include <limits>
#include <utility>

#include "common/base/clock.h"
#include "common/limits/limits.h"
#include "common/metrics/shard.h"
#include "common/server/query_gate.h"

namespace kdns::server {
namespace {

constexpr uint64_t kMirrorIntervalMs = 1000;

void CloseIfOpen(int fd) {
  if (fd >= 0) close(fd);
}

}  // namespace

std::shared_ptr<loop::TcpConnectionCaps> MakeTcpCaps(const TcpOptions& options) {
  return std::make_shared<loop::TcpConnectionCaps>(options.max_connections,
                                                   options.max_connections_per_source);
}

std::shared_ptr<loop::OutputBudget> MakeOutputBudget(const TcpOptions& options) {
  return std::make_shared<loop::OutputBudget>(options.max_pending_output_bytes_total);
}

std::unique_ptr<LoopServer> LoopServer::Create(loop::Loop& loop, const Options& options,
                                               const HandlerFactory& factory, ThreadStats& stats,
                                               std::string* error, Failure* failure) {
  Failure ignored;
  if (failure == nullptr) failure = &ignored;
  *failure = Failure::kNone;
  const bool from_fds = options.udp_fd >= 0 || options.tcp_fd >= 0;
  if (from_fds && (options.udp_fd < 0 || options.tcp_fd < 0)) {
    CloseIfOpen(options.udp_fd);
    CloseIfOpen(options.tcp_fd);
    *error = "inherited DNS sockets: need both a UDP and a TCP fd";
    *failure = Failure::kUdp;
    return nullptr;
  }
  std::unique_ptr<LoopServer> server(new LoopServer(loop, options, stats));
  LoopServer* self = server.get();

  // Bind first, then make the handler: no datagram is delivered before the loop runs, and
  // the factory then runs once per thread even when a port-0 bind is retried.
  loop::UdpSocket::Options udp;
  udp.reuse_port = options.reuse_port;
  udp.receive_buffer_bytes = options.udp.receive_buffer_bytes;
  udp.send_buffer_bytes = options.udp.send_buffer_bytes;
  udp.max_pending_sends = options.udp.max_pending_sends;
  udp.receiver_group = options.udp.receiver_group;
  udp.receiver_yield_window = options.udp.receiver_yield_window;
  auto on_datagram = [self](std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                            const loop::UdpReplyContext& reply_context) {
    self->OnDatagram(datagram, peer, reply_context);
  };
  std::string socket_error;
  if (from_fds) {
    server->udp_ = loop::UdpSocket::FromFd(loop, options.udp_fd, options.fd_sharing, udp,
                                           on_datagram, &socket_error);
  } else {
    server->udp_ = loop::UdpSocket::Bind(loop, options.address, udp, on_datagram, &socket_error);
  }
  if (server->udp_ == nullptr) {
    if (from_fds) CloseIfOpen(options.tcp_fd);
    *error = "UDP: " + socket_error;
    *failure = Failure::kUdp;
    return nullptr;
  }

  loop::TcpListener::Options tcp;
  tcp.reuse_port = options.reuse_port;
  tcp.backlog = options.tcp.backlog;
  // The caps are the process's (OnAccept), which can make room; the listener's would not.
  tcp.max_connections = std::numeric_limits<size_t>::max();
  tcp.connection.idle_timeout_ms = 0;  // DnsTcpConnection keeps the DNS idle timeout
  tcp.connection.max_pending_output_bytes = options.tcp.max_pending_output_bytes;
  tcp.connection.output_budget = server->options_.tcp.output_budget;
  auto on_accept = [self](std::unique_ptr<loop::TcpConnection> connection) {
    self->OnAccept(std::move(connection));
  };
  if (from_fds) {
    server->tcp_ = loop::TcpListener::FromFd(loop, options.tcp_fd, tcp, on_accept, &socket_error);
  } else {
    // With port 0, TCP takes the port the kernel gave UDP, so both share one port. That
    // port may be taken for TCP (a listener, or the local end of some connection): then
    // let the kernel pick another UDP port and try again.
    for (int attempt = 0; attempt < loop::kPortZeroAttempts; ++attempt) {
      loop::SocketAddress address = options.address;
      address.set_port(server->udp_->GetLocalAddress().port());
      server->tcp_ = loop::TcpListener::Bind(loop, address, tcp, on_accept, &socket_error);
      if (server->tcp_ != nullptr || options.address.port() != 0) break;
      server->udp_ = loop::UdpSocket::Bind(loop, options.address, udp, on_datagram, &socket_error);
      if (server->udp_ == nullptr) {
        *error = "UDP: " + socket_error;
        *failure = Failure::kUdp;
        return nullptr;
      }
    }
  }
  if (server->tcp_ == nullptr) {
    *error = "TCP: " + socket_error;
    *failure = Failure::kTcp;
    return nullptr;
  }

  std::string handler_error = "the handler factory returned no handler";
  try {
    server->handler_ = factory(server->context_);
  } catch (const std::exception& e) {
    handler_error = std::string("the handler factory threw: ") + e.what();
  }
  if (server->handler_ == nullptr) {
    *error = handler_error;
    *failure = Failure::kHandler;
    return nullptr;
  }
  if (options.udp.receiver_thread) {
    QueryHandler* handler = server->handler_.get();
    loop::UdpSocket::ReceiverThreadCalls calls;
    calls.fast_path = [self](std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                             std::span<uint8_t> out, loop::UdpHandoffNote* note) -> size_t {
      return self->AnswerOnReceiver(datagram, peer, out, static_cast<HandedOff&>(*note));
    };
    calls.make_note = [] { return std::make_unique<HandedOff>(); };
    calls.idle = [handler] { handler->ReleaseReceiverSnapshots(); };
    // The receiver counts most of this thread's queries: one metrics shard for the two.
    calls.on_start = [shard = metrics::ThisThreadShard()] { metrics::UseShard(shard); };
    calls.on_handoff = [self](std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                              const loop::UdpReplyContext& reply_context,
                              loop::UdpHandoffNote* note) {
      self->OnHandedOff(datagram, peer, reply_context, static_cast<HandedOff&>(*note));
    };
    if (!server->udp_->StartReceiverThread(std::move(calls), &socket_error)) {
      *error = "UDP receiver thread: " + socket_error;
      *failure = Failure::kUdp;
      return nullptr;
    }
  }
  // Unref'd: releasing snapshots is no reason to keep the loop running.
  CHECK_EQ(server->release_prepare_.Open(
               self, [&](uv_prepare_t* h) { return uv_prepare_init(loop.get(), h); }),
           0);
  uv_prepare_start(server->release_prepare_.get(), &LoopServer::OnPrepare);
  uv_unref(reinterpret_cast<uv_handle_t*>(server->release_prepare_.get()));
  server->mirror_timer_.StartRepeating(kMirrorIntervalMs, [self] { self->MirrorSocketStats(); });
  // Other threads at the total cap may ask this one to close a connection for theirs.
  server->room_tasks_ = std::make_unique<loop::TaskQueue>(loop);
  server->room_maker_id_ = server->options_.tcp.caps->AddRoomMaker(
      [self, poster = server->room_tasks_->poster()](
          const loop::TcpConnectionCaps::RoomRequest& request) {
        (void)poster.Post([self, request] { self->MakeRoom(request); });
      });
  if (options.clients != nullptr && options.clients->enabled()) {
    server->clients_timer_.StartRepeating(ClientLimiter::kTickNs / 1'000'000,
                                          [self] { self->TickClients(); });
  }
  return server;
}

LoopServer::LoopServer(loop::Loop& loop, const Options& options, ThreadStats& stats)
    : loop_(loop),
      options_(options),
      gate_(options_.admission, options_.client_address, options_.clients.get(),
            options_.responses.get()),
      stats_(stats),
      response_buffer_(kResponseBufferBytes),
      context_{loop, options.thread_index, response_buffer_.items()},
      mirror_timer_(loop),
      clients_timer_(loop) {
  if (options_.tcp.caps == nullptr) options_.tcp.caps = MakeTcpCaps(options_.tcp);
  if (options_.tcp.output_budget == nullptr)
    options_.tcp.output_budget = MakeOutputBudget(options_.tcp);
}

LoopServer::~LoopServer() {
  // No other thread reaches this one any more; what they posted is dropped.
  if (room_maker_id_ != 0) options_.tcp.caps->RemoveRoomMaker(room_maker_id_);
  room_tasks_.reset();
  // The receiver thread calls into the handler.
  if (udp_ != nullptr) udp_->StopReceiverThread();
  release_prepare_.Reset();
  // Responders the handler holds drop into connections that still exist.
  handler_.reset();
  MirrorSocketStats();
  idle_oldest_ = idle_newest_ = nullptr;
  connections_.clear();  // no close callback follows a destroyed connection
  tcp_.reset();
  udp_.reset();
  ThreadStats::Set(stats_.tcp_open, 0);
}

size_t LoopServer::AnswerOnReceiver(std::span<const uint8_t> datagram,
                                    const loop::SocketAddress& peer, std::span<uint8_t> out,
                                    HandedOff& note) {
  constexpr size_t kDrop = loop::UdpReceiverThread::kDropDatagram;
  const uint64_t now_ns = gate_.NowNs();
  size_t limited_size = 0;
  // The same gate as on the loop, passed once: a datagram not answered here goes to the
  // loop with its admission and the handler's decision (OnHandedOff).
  note.admitted_from = datagram.data();
  note.decision = Decision{};
  if (gate_.Enter(datagram, dns::Transport::kUdp, peer, now_ns, &note.admission, out,
                  &limited_size) == QueryGate::Pass::kLimited) {
    return limited_size > 0 ? limited_size : kDrop;
  }
  const Admission& admission = note.admission;
  if (!admission.admitted()) return 0;
  const size_t size =
      handler_->AnswerOnReceiverThread(admission, datagram, peer, out, &note.decision);
  if (size == 0) return 0;
  ThreadStats::Increment(stats_.udp_fast_answers);
  if (!gate_.limits_responses()) return size;
  std::array<uint8_t, kMaxLimitedReplyBytes> slip;
  const std::span<const uint8_t> reply =
      gate_.Leave(admission.client, admission.client_source == ClientSource::kOption,
                  out.first(size), now_ns, slip);
  if (reply.empty()) return kDrop;
  if (reply.data() != out.data()) std::copy(reply.begin(), reply.end(), out.begin());
  return reply.size();
}

void LoopServer::HandedOff::MoveTo(std::span<const uint8_t> copy) {
  if (!admission.query.edns || admission.query.edns->options.empty()) return;
  const std::span<const uint8_t> options = admission.query.edns->options;
  admission.query.edns->options =
      copy.subspan(static_cast<size_t>(options.data() - admitted_from), options.size());
}

void LoopServer::OnDatagram(std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                            const loop::UdpReplyContext& reply_context) {
  std::array<uint8_t, kMaxLimitedReplyBytes> limited;
  size_t limited_size = 0;
  Admission admission;
  if (gate_.Enter(datagram, dns::Transport::kUdp, peer, gate_.NowNs(), &admission, limited,
                  &limited_size) == QueryGate::Pass::kLimited) {
    if (limited_size > 0) udp_->Send(std::span(limited).first(limited_size), peer, reply_context);
    return;
  }
  HandleDatagram(datagram, admission, Decision{}, peer, reply_context);
}

void LoopServer::OnHandedOff(std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                             const loop::UdpReplyContext& reply_context, HandedOff& note) {
  note.MoveTo(datagram);
  HandleDatagram(datagram, note.admission, note.decision, peer, reply_context);
}

void LoopServer::HandleDatagram(std::span<const uint8_t> datagram, const Admission& admission,
                                const Decision& decision, const loop::SocketAddress& peer,
                                const loop::UdpReplyContext& reply_context) {
  ThreadStats::Increment(stats_.udp_queries);
  Request request(context_, datagram, admission, decision,
                  Responder(this, dns::Transport::kUdp, peer, admission, reply_context, 0));
  Handle(request);
}

void LoopServer::OnAccept(std::unique_ptr<loop::TcpConnection> connection) {
  const IpAddress source = loop::IpOf(connection->peer_address());
  loop::TcpConnectionCaps::Slot slot;
  if (!AdmitConnection(source, &slot)) {
    ThreadStats::Increment(stats_.tcp_rejected);
    return;  // destroying the connection closes it
  }
  const uint64_t id = next_connection_id_++;
  loop::DnsTcpConnection::Options dns;
  dns.idle_timeout_ms = options_.tcp.idle_timeout_ms;
  dns.frame_timeout_ms = options_.tcp.frame_timeout_ms;
  dns.query_timeout_ms = options_.tcp.query_timeout_ms;
  dns.max_outstanding_queries = options_.tcp.max_outstanding_queries;
  dns.max_pending_output_bytes = options_.tcp.max_pending_output_bytes;
  Connection& entry = connections_[id];
  entry.slot = std::move(slot);
  entry.source = source;
  entry.opened_order = id;
  entry.dns = std::make_unique<loop::DnsTcpConnection>(
      loop_, std::move(connection), dns,
      [this, id](std::span<const uint8_t> query) { OnTcpQuery(id, query); },
      [this, id](loop::TcpConnection::CloseReason reason) { OnTcpClosed(id, reason); },
      [this, id] { OnTcpOverdue(id); });
  MarkIdle(entry);
  ThreadStats::Increment(stats_.tcp_accepted);
  ThreadStats::Set(stats_.tcp_open, connections_.size());
  MirrorSocketStats();
}

bool LoopServer::AdmitConnection(const IpAddress& source, loop::TcpConnectionCaps::Slot* slot) {
  // At most one eviction per cap: after it the slot is free, unless another thread took it
  // in between, and then the new connection is refused rather than taking more.
  for (int evictions = 0;; ++evictions) {
    const auto verdict = options_.tcp.caps->TryAcquire(source, slot);
    if (verdict == loop::TcpConnectionCaps::Verdict::kAdmitted) return true;
    const bool per_source = verdict == loop::TcpConnectionCaps::Verdict::kOverSource;
    limits::RecordLimitHit(
        per_source ? limits::Limit::kTcpConnectionsPerSource : limits::Limit::kTcpConnections,
        source.ToString());
    if (evictions >= 2) return false;
    if (per_source) {
      Connection* victim = OldestIdleFrom(source);
      if (victim == nullptr) return false;
      Evict(*victim);
      continue;
    }
    Connection* victim = FairVictim(options_.tcp.caps->open_from(source));
    if (victim == nullptr) return AdmitOverCap(source, slot);
    Evict(*victim);
  }
}

void LoopServer::Evict(Connection& victim) {
  if (!victim.idle) {
    // Its queries are dropped when it closes (OnTcpClosed, QueryHandler::OnConnectionClosed).
    limits::RecordLimitHit(limits::Limit::kTcpEvictedInFlight, victim.source.ToString());
  }
  MarkBusy(victim);  // off the idle list: it is closing
  victim.slot.Release();
  victim.dns->Close(loop::TcpConnection::CloseReason::kEvicted);
  ThreadStats::Increment(stats_.tcp_evicted);
}

void LoopServer::MarkIdle(Connection& connection) {
  if (connection.idle) return;
  connection.idle = true;
  connection.idle_order = next_idle_order_++;
  connection.idle_prev = idle_newest_;
  connection.idle_next = nullptr;
  (idle_newest_ != nullptr ? idle_newest_->idle_next : idle_oldest_) = &connection;
  idle_newest_ = &connection;
}

void LoopServer::MarkBusy(Connection& connection) {
  if (!connection.idle) return;
  connection.idle = false;
  (connection.idle_prev != nullptr ? connection.idle_prev->idle_next : idle_oldest_) =
      connection.idle_next;
  (connection.idle_next != nullptr ? connection.idle_next->idle_prev : idle_newest_) =
      connection.idle_prev;
  connection.idle_prev = connection.idle_next = nullptr;
}

LoopServer::Connection* LoopServer::OldestIdleFrom(const IpAddress& source) {
  // Bounded by this thread's share of the caps; walked only at a cap.
  for (Connection* c = idle_oldest_; c != nullptr; c = c->idle_next) {
    if (c->source == source) return c;
  }
  return nullptr;
}

bool LoopServer::AdmitOverCap(const IpAddress& source, loop::TcpConnectionCaps::Slot* slot) {
  loop::TcpConnectionCaps& caps = *options_.tcp.caps;
  const size_t newcomer = caps.open_from(source);
  // Only a source holding at least two more may lose a busy connection (PickEvictionVictim);
  // whether another thread's are idle is not known here, so that is the test.
  if (caps.max_from_one_source() < newcomer + 2) return false;
  // At most one place lent per other thread at a time: each can close one at once.
  const size_t others = caps.room_makers() > 0 ? caps.room_makers() - 1 : 0;
  if (!caps.TryAcquireOver(source, others, slot)) return false;
  caps.AskForRoom(room_maker_id_, newcomer);
  return true;
}

void LoopServer::MakeRoom(const loop::TcpConnectionCaps::RoomRequest& request) {
  Connection* victim = FairVictim(request.newcomer_source_connections);
  // The first thread with a victim closes it; the place lent is covered when it goes.
  if (victim != nullptr && !request.claim->exchange(true)) Evict(*victim);
}

LoopServer::Connection* LoopServer::FairVictim(size_t newcomer_source_connections) {
  // Walked only at the cap, over this thread's connections; each source's count is read
  // once (a lock of TcpConnectionCaps' shard).
  std::unordered_map<IpAddress, size_t, IpAddressHash> source_connections;
  auto count_of = [&](const IpAddress& ip) {
    auto [it, added] = source_connections.try_emplace(ip, 0);
    if (added) it->second = options_.tcp.caps->open_from(ip);
    return it->second;
  };
  eviction_candidates_.clear();
  eviction_connections_.clear();
  for (auto& [id, connection] : connections_) {
    if (!connection.slot.held()) continue;  // closing already
    eviction_candidates_.push_back(
        {count_of(connection.source), connection.idle,
         connection.idle ? connection.idle_order : connection.opened_order});
    eviction_connections_.push_back(&connection);
  }
  const std::optional<size_t> victim =
      loop::PickEvictionVictim(eviction_candidates_, newcomer_source_connections);
  return victim ? eviction_connections_[*victim] : nullptr;
}

void LoopServer::OnTcpQuery(uint64_t id, std::span<const uint8_t> query) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;  // cannot happen: closed connections deliver nothing
  ++it->second.unanswered;
  MarkBusy(it->second);
  ThreadStats::Increment(stats_.tcp_queries);
  const loop::SocketAddress& peer = it->second.dns->peer_address();
  Admission admission;
  std::array<uint8_t, kMaxLimitedReplyBytes> refusal;
  size_t refusal_size = 0;
  const QueryGate::Pass pass = gate_.Enter(query, dns::Transport::kTcp, peer, gate_.NowNs(),
                                           &admission, refusal, &refusal_size);
  Request request(
      context_, query, admission, Decision{},
      Responder(this, dns::Transport::kTcp, peer, admission, loop::UdpReplyContext(), id));
  if (pass == QueryGate::Pass::kLimited) {
    if (refusal_size > 0) (void)request.Reply(std::span(refusal).first(refusal_size));
    return;  // a request still pending is dropped
  }
  Handle(request);
}

void LoopServer::OnTcpClosed(uint64_t id, loop::TcpConnection::CloseReason reason) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  using CloseReason = loop::TcpConnection::CloseReason;
  std::optional<limits::Limit> limit;
  switch (reason) {
    case CloseReason::kFrameTimeout:
      limit = limits::Limit::kTcpFrameTimeout;
      break;
    case CloseReason::kIdleTimeout:
      limit = limits::Limit::kTcpIdleTimeout;
      break;
    case CloseReason::kOutputOverflow:
      limit = limits::Limit::kTcpOutputPerConnection;
      break;
    case CloseReason::kOutputTotal:
      limit = limits::Limit::kTcpOutputTotal;
      break;
    default:
      break;  // evictions were counted at the accept that caused them
  }
  if (limit) limits::RecordLimitHit(*limit, it->second.source.ToString());
  MarkBusy(it->second);
  // Destroys the DnsTcpConnection from its close callback, as it allows. Late Responders
  // for it find no entry and drop their reply.
  connections_.erase(it);
  ThreadStats::Set(stats_.tcp_open, connections_.size());
  // Its waiting queries can only drop now: let the handler free them at once.
  if (handler_ != nullptr) handler_->OnConnectionClosed(id);
}

void LoopServer::OnTcpOverdue(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  limits::RecordLimitHit(limits::Limit::kTcpQueryTimeout, it->second.source.ToString());
  // What the handler answers now frees the connection; if it answers nothing, the
  // DnsTcpConnection closes it (kQueryTimeout) and its waiting queries are dropped.
  if (handler_ != nullptr) handler_->OnQueriesOverdue(id);
}

void LoopServer::Handle(Request& request) {
  try {
    handler_->HandleQuery(request);
  } catch (const std::exception& e) {
    LOG_EVERY_N(ERROR, 1000) << "DNS handler threw on a " << dns::TransportName(request.transport())
                             << " query from " << request.peer().ToString() << ": " << e.what();
  } catch (...) {
    LOG_EVERY_N(ERROR, 1000) << "DNS handler threw a non-std exception on a "
                             << dns::TransportName(request.transport()) << " query";
  }
  // A still pending request is dropped when it goes out of scope in the caller.
}

bool LoopServer::Reply(const Responder& responder, std::span<const uint8_t> response) {
  if (responder.transport_ == dns::Transport::kUdp) {
    std::array<uint8_t, kMaxLimitedReplyBytes> slip;
    if (gate_.limits_responses()) {
      response =
          gate_.Leave(responder.client(), responder.via_forwarder(), response, gate_.NowNs(), slip);
    }
    if (!response.empty() && udp_ != nullptr &&
        udp_->Send(response, responder.peer(), responder.reply_context_)) {
      ThreadStats::Increment(stats_.udp_replies);
      return true;
    }
    ThreadStats::Increment(stats_.dropped_replies);
    return false;
  }
  auto it = connections_.find(responder.connection_id_);
  if (it == connections_.end()) {
    ThreadStats::Increment(stats_.dropped_replies);  // the client went away
    return false;
  }
  Connection& connection = it->second;
  if (connection.unanswered > 0 && --connection.unanswered == 0) MarkIdle(connection);
  // Send never calls back into us (DnsTcpConnection closes from a later libuv callback).
  const bool sent = connection.dns->Send(response);
  ThreadStats::Increment(sent ? stats_.tcp_replies : stats_.dropped_replies);
  if (connection.dropped && connection.unanswered == 0) connection.dns->Close();
  return sent;
}

void LoopServer::Drop(const Responder& responder) {
  ThreadStats::Increment(stats_.unanswered);
  if (responder.transport_ == dns::Transport::kUdp) return;
  auto it = connections_.find(responder.connection_id_);
  if (it == connections_.end()) return;
  Connection& connection = it->second;
  if (connection.unanswered > 0 && --connection.unanswered == 0) MarkIdle(connection);
  // DnsTcpConnection counts the query as outstanding until a response is sent, which
  // would keep the connection open forever; close it once the other queries are answered.
  connection.dropped = true;
  if (connection.unanswered == 0) connection.dns->Close();
}

void LoopServer::TickClients() {
  bool backlog = false;
  std::array<uint32_t, SK_MEMINFO_VARS> meminfo{};
  socklen_t size = sizeof(meminfo);
  if (udp_ != nullptr &&
      getsockopt(udp_->fd(), SOL_SOCKET, SO_MEMINFO, meminfo.data(), &size) == 0) {
    const uint32_t drops = meminfo[SK_MEMINFO_DROPS];
    backlog = uint64_t{meminfo[SK_MEMINFO_RMEM_ALLOC]} * 2 >= meminfo[SK_MEMINFO_RCVBUF] ||
              drops != socket_drops_;
    socket_drops_ = drops;
  }
  options_.clients->Tick(SteadyNowNs(), backlog ? Overload::kReceiveBacklog : Overload::kNone);
}

// Only when the loop may block: an iteration that goes straight on (pending work, a
// timer due) keeps the thread's snapshot, so a busy loop pays nothing.
void LoopServer::OnPrepare(uv_prepare_t* handle) noexcept {
  auto* self = static_cast<LoopServer*>(handle->data);
  if (self == nullptr || self->handler_ == nullptr) return;
  if (uv_backend_timeout(handle->loop) == 0) return;
  try {
    self->handler_->ReleaseSnapshots();
  } catch (const std::exception& e) {
    LOG_EVERY_N(ERROR, 100) << "ReleaseSnapshots threw: " << e.what();
  } catch (...) {
    LOG_EVERY_N(ERROR, 100) << "ReleaseSnapshots threw a non-std exception";
  }
}

void LoopServer::MirrorSocketStats() {
  if (udp_ != nullptr) {
    ThreadStats::Set(stats_.udp_truncated, udp_->stats().truncated);
    ThreadStats::Set(stats_.udp_errors, udp_->stats().errors);
  }
}

}  // namespace kdns::server

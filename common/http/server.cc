#include "common/http/server.h"

#include <glog/logging.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "common/limits/limits.h"
#include "common/loop/timer.h"

namespace kdns::http {

using loop::TcpConnection;

// Small request bodies (a stray POST) are read and discarded so the answer is a clean 405.
constexpr size_t kMaxBodyBytes = 1024;

class Server::Connection {
 public:
  Connection(Server& server, uint64_t id, std::string source, std::unique_ptr<TcpConnection> tcp)
      : server_(server),
        id_(id),
        source_(std::move(source)),
        tcp_(std::move(tcp)),
        timer_(server.loop_) {}

  void Start() {
    TcpConnection::Callbacks callbacks;
    callbacks.on_data = [this](std::span<const uint8_t> bytes) { OnData(bytes); };
    callbacks.on_drain = [this] { OnDrain(); };
    // Destroys this Connection; TcpConnection allows that from its close callback.
    callbacks.on_close = [this](TcpConnection::CloseReason) {
      StopCounting();
      server_.Remove(id_);
    };
    tcp_->Start(std::move(callbacks));
    BecomeIdle();
  }

  const std::string& source() const { return source_; }
  // Between requests: nothing of a request read, no response in flight.
  bool idle() const { return counted_ && phase_ == Phase::kIdle; }
  // A request head is arriving and is not complete yet.
  bool reading() const { return counted_ && phase_ == Phase::kReading; }
  // Orders connections by when they entered their phase (idle, or reading).
  uint64_t phase_sequence() const { return phase_sequence_; }

  // Closes an idle or reading connection to make room for a newcomer; it stops counting at
  // once. No response: a reading one has not sent a whole request in all this time.
  void CloseForNewcomer() {
    DCHECK(idle() || reading());
    phase_ = Phase::kClosing;
    timer_.Stop();
    StopCounting();
    tcp_->Close();
  }

 private:
  enum class Phase {
    kIdle,     // waiting for the first byte of a request: idle timeout
    kReading,  // a request is arriving: request timeout from its first byte
    kWriting,  // a response is draining: request timeout again
    kClosing,  // last response queued, FIN pending: request timeout, then a hard close
  };

  void OnData(std::span<const uint8_t> bytes) {
    if (phase_ == Phase::kClosing) return;
    // The parser fails at max_request_bytes (+ a small body) anyway; never buffer more.
    size_t room = server_.options_.max_request_bytes + kMaxBodyBytes + 1 - buffer_.size();
    size_t take = std::min(room, bytes.size());
    buffer_.append(reinterpret_cast<const char*>(bytes.data()), take);
    if (phase_ != Phase::kWriting) Process();
  }

  void OnDrain() {
    if (phase_ != Phase::kWriting) return;
    BecomeIdle();
    tcp_->ResumeReading();
    Process();
  }

  // Answers the requests in buffer_, one at a time, until one is incomplete or a response
  // has to drain first.
  void Process() {
    while (phase_ == Phase::kIdle || phase_ == Phase::kReading) {
      if (buffer_.empty()) return;  // kIdle, with the idle timer running
      if (phase_ == Phase::kIdle) {
        phase_ = Phase::kReading;
        phase_sequence_ = server_.next_phase_sequence_++;
        SetTimer(server_.options_.request_timeout_ms);
      }
      RequestParser::Result result = server_.parser_.Parse(buffer_);
      if (result.status == RequestParser::Status::kIncomplete) return;
      if (result.status == RequestParser::Status::kError) {
        ++server_.stats_.bad_requests;
        Respond(Response::Text(result.error_status,
                               std::string(ReasonPhrase(result.error_status)) + "\n"),
                BodyMode::kInclude, ConnectionMode::kClose);
        return;
      }
      buffer_.erase(0, result.consumed);
      ++server_.stats_.requests;
      const Request& request = result.request;
      Response response = server_.Dispatch(request);
      Respond(response, request.method == "HEAD" ? BodyMode::kOmit : BodyMode::kInclude,
              request.keep_alive ? ConnectionMode::kKeepAlive : ConnectionMode::kClose);
      if (phase_ == Phase::kClosing) return;
      if (tcp_->pending_output_bytes() > 0) {
        // One response in flight at a time: pause reading until it drains.
        phase_ = Phase::kWriting;
        tcp_->PauseReading();
        SetTimer(server_.options_.request_timeout_ms);
        return;
      }
      BecomeIdle();
    }
  }

  void BecomeIdle() {
    phase_ = Phase::kIdle;
    phase_sequence_ = server_.next_phase_sequence_++;
    SetTimer(server_.options_.idle_timeout_ms);
  }

  void StopCounting() {
    if (!counted_) return;
    counted_ = false;
    server_.Uncount(source_);
  }

  void Respond(const Response& response, BodyMode body_mode, ConnectionMode connection_mode) {
    std::string bytes = SerializeResponse(response, body_mode, connection_mode);
    if (!tcp_->Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              bytes.size()))) {
      LOG_EVERY_N(WARNING, 100) << "HTTP response of " << bytes.size() << " bytes to "
                                << tcp_->peer_address().ToString()
                                << " exceeds the output bound; closing";
      phase_ = Phase::kClosing;
      tcp_->Close(TcpConnection::CloseReason::kOutputOverflow);
      return;
    }
    if (connection_mode == ConnectionMode::kClose) {
      phase_ = Phase::kClosing;
      tcp_->CloseWhenFlushed();
      SetTimer(server_.options_.request_timeout_ms);
    }
  }

  void OnTimeout() {
    switch (phase_) {
      case Phase::kReading:
        ++server_.stats_.timeouts;
        limits::RecordLimitHit(limits::Limit::kHttpRequestTimeout, source_);
        Respond(Response::Text(408, "Request Timeout\n"), BodyMode::kInclude,
                ConnectionMode::kClose);
        return;
      case Phase::kWriting:
        // The response did not drain: the request is not done in time either.
        ++server_.stats_.timeouts;
        limits::RecordLimitHit(limits::Limit::kHttpRequestTimeout, source_);
        [[fallthrough]];
      case Phase::kIdle:
      case Phase::kClosing:
        phase_ = Phase::kClosing;
        tcp_->Close();
        return;
    }
  }

  void SetTimer(uint64_t ms) {
    timer_.Start(ms, [this] { OnTimeout(); });
  }

  Server& server_;
  const uint64_t id_;
  const std::string source_;  // the peer's address without its port: the per-source key
  std::unique_ptr<TcpConnection> tcp_;
  loop::Timer timer_;
  std::string buffer_;
  Phase phase_ = Phase::kIdle;
  uint64_t phase_sequence_ = 0;
  bool counted_ = true;  // counts against the caps until it closes
};

Server::Server(loop::Loop& loop, const Options& options, Routes routes)
    : loop_(loop),
      options_(options),
      parser_(RequestParser::Limits{options.max_request_bytes, 64, kMaxBodyBytes}),
      routes_(std::move(routes)) {
  CHECK_GT(options_.max_connections, 0u);
  CHECK_GT(options_.max_connections_per_source, 0u);
}

Server::~Server() = default;

void Server::Handle(const std::string& path, Handler handler) {
  routes_.Handle(path, std::move(handler));
}

void Server::HandlePrefix(const std::string& prefix, Handler handler) {
  routes_.HandlePrefix(prefix, std::move(handler));
}

bool Server::Start(std::string* error) {
  loop::TcpListener::Options listener_options;
  // One over the cap, so that Accept() sees the newcomer and chooses whom to close; the
  // listener's own count never exceeds ours (a closed connection leaves both).
  listener_options.max_connections = options_.max_connections + 1;
  listener_options.connection.max_pending_output_bytes = options_.max_response_bytes;
  listener_options.reuse_port = options_.reuse_port;
  listener_ = loop::TcpListener::Bind(
      loop_, options_.bind_address, listener_options,
      [this](std::unique_ptr<TcpConnection> tcp) { Accept(std::move(tcp)); }, error);
  if (listener_ == nullptr) {
    *error = "HTTP server: " + *error;
    return false;
  }
  return true;
}

loop::SocketAddress Server::GetLocalAddress() const {
  return listener_ == nullptr ? loop::SocketAddress() : listener_->GetLocalAddress();
}

void Server::Accept(std::unique_ptr<TcpConnection> tcp) {
  std::string source = tcp->peer_address().HostString();
  auto from_source = open_by_source_.find(source);
  if (from_source != open_by_source_.end() &&
      from_source->second >= options_.max_connections_per_source) {
    limits::RecordLimitHit(limits::Limit::kHttpConnectionsPerSource, source);
    if (!CloseOldestIdle(source)) {
      ++stats_.refused;
      return;  // destroying `tcp` closes it
    }
  }
  if (open_ >= options_.max_connections) {
    limits::RecordLimitHit(limits::Limit::kHttpConnections, source);
    if (!CloseForNewcomerAtServerCap(source)) {
      ++stats_.refused;
      return;
    }
  }
  ++stats_.accepted;
  ++open_;
  ++open_by_source_[source];
  uint64_t id = next_id_++;
  auto connection = std::make_unique<Connection>(*this, id, std::move(source), std::move(tcp));
  Connection* raw = connection.get();
  connections_[id] = std::move(connection);
  raw->Start();
}

bool Server::CloseOldestIdle(const std::string& source) {
  // Scans like this run only at a cap, over at most max_connections connections.
  Connection* oldest = nullptr;
  for (const auto& [id, connection] : connections_) {
    if (connection->idle() && connection->source() == source &&
        (oldest == nullptr || connection->phase_sequence() < oldest->phase_sequence())) {
      oldest = connection.get();
    }
  }
  if (oldest == nullptr) return false;
  ++stats_.idle_closed_at_cap;
  oldest->CloseForNewcomer();
  return true;
}

bool Server::CloseForNewcomerAtServerCap(const std::string& newcomer) {
  auto holds = [this](const std::string& source) {
    auto it = open_by_source_.find(source);
    return it == open_by_source_.end() ? size_t{0} : it->second;
  };
  const size_t newcomer_holds = holds(newcomer);
  Connection* idle = nullptr;  // the oldest idle one the newcomer may close
  Connection* slow = nullptr;  // the oldest slow request it may close
  for (const auto& [id, connection] : connections_) {
    if (!connection->idle() && !connection->reading()) continue;
    const bool own = connection->source() == newcomer;
    // Fair share: a source at or near the newcomer's holding keeps its slots.
    const bool heavier = !own && holds(connection->source()) > newcomer_holds + 1;
    if (connection->idle() && (own || heavier)) {
      if (idle == nullptr || connection->phase_sequence() < idle->phase_sequence()) {
        idle = connection.get();
      }
    } else if (connection->reading() && heavier) {
      if (slow == nullptr || connection->phase_sequence() < slow->phase_sequence()) {
        slow = connection.get();
      }
    }
  }
  if (idle != nullptr) {
    ++stats_.idle_closed_at_cap;
    idle->CloseForNewcomer();
    return true;
  }
  if (slow != nullptr) {
    ++stats_.slow_closed_at_cap;
    slow->CloseForNewcomer();
    return true;
  }
  return false;
}

size_t Server::idle_connections() const {
  return static_cast<size_t>(std::count_if(connections_.begin(), connections_.end(),
                                           [](const auto& entry) { return entry.second->idle(); }));
}

void Server::Uncount(const std::string& source) {
  DCHECK_GT(open_, 0u);
  --open_;
  auto it = open_by_source_.find(source);
  DCHECK(it != open_by_source_.end());
  if (it != open_by_source_.end() && --it->second == 0) open_by_source_.erase(it);
}

void Server::Remove(uint64_t id) { connections_.erase(id); }

Response Server::Dispatch(const Request& request) {
  if (request.method != "GET" && request.method != "HEAD") {
    Response response = Response::Text(405, "Method Not Allowed\n");
    response.headers.emplace_back("Allow", "GET, HEAD");
    return response;
  }
  const Handler* handler = routes_.Find(request.path);
  if (handler == nullptr) return Response::Text(404, "Not Found\n");
  try {
    return (*handler)(request);
  } catch (const std::exception& e) {
    LOG_EVERY_N(ERROR, 100) << "HTTP handler for " << request.path << " threw: " << e.what();
  } catch (...) {
    LOG_EVERY_N(ERROR, 100) << "HTTP handler for " << request.path << " threw";
  }
  return Response::Text(500, "Internal Server Error\n");
}

}  // namespace kdns::http

#include "common/loop/dns_tcp_connection.h"

#include <glog/logging.h>

#include <utility>

namespace kdns::loop {

using CloseReason = TcpConnection::CloseReason;

DnsTcpConnection::DnsTcpConnection(Loop& loop, std::unique_ptr<TcpConnection> connection,
                                   const Options& options, QueryCallback on_query,
                                   CloseCallback on_close)
    : connection_(std::move(connection)),
      options_(options),
      on_query_(std::move(on_query)),
      on_close_(std::move(on_close)),
      resume_timer_(loop) {
  if (options_.max_outstanding_queries == 0) options_.max_outstanding_queries = 1;
  TcpConnection::Callbacks callbacks;
  callbacks.on_data = [this](std::span<const uint8_t> bytes) { OnData(bytes); };
  callbacks.on_eof = [this] { OnEof(); };
  callbacks.on_close = [this](CloseReason reason) {
    if (on_close_) on_close_(reason);
  };
  connection_->Start(std::move(callbacks));
  UpdateIdleTimer();
}

DnsTcpConnection::~DnsTcpConnection() = default;

void DnsTcpConnection::OnData(std::span<const uint8_t> bytes) {
  auto result = framer_.Feed(bytes, [this](std::span<const uint8_t> m) { return OnMessage(m); });
  if (result == DnsTcpFramer::Result::kBadLength) {
    LOG_EVERY_N(WARNING, 1000) << "DNS/TCP from " << peer_address().ToString()
                               << ": message length below the DNS header; closing";
    connection_->Close(CloseReason::kProtocolError);
  }
}

DnsTcpFramer::Next DnsTcpConnection::OnMessage(std::span<const uint8_t> message) {
  ++outstanding_;
  ++stats_.queries;
  UpdateIdleTimer();
  {
    internal::DeathWatch::Scope scope(death_watch_);
    internal::CallUser("DnsTcpConnection query", [&] { on_query_(message); });
    if (scope.dead()) return DnsTcpFramer::Next::kAbandon;
  }
  if (!connection_->is_open()) return DnsTcpFramer::Next::kPause;
  if (outstanding_ >= options_.max_outstanding_queries) {
    connection_->PauseReading();
    return DnsTcpFramer::Next::kPause;
  }
  return DnsTcpFramer::Next::kContinue;
}

void DnsTcpConnection::OnEof() {
  peer_done_ = true;
  // Queries still buffered (paused at the cap) are answered too; close once all are.
  if (outstanding_ == 0 && !framer_.paused()) connection_->CloseWhenFlushed();
}

bool DnsTcpConnection::Send(std::span<const uint8_t> response) {
  if (response.size() > 65535 || !connection_->is_open()) return false;
  const uint8_t prefix[2] = {static_cast<uint8_t>(response.size() >> 8),
                             static_cast<uint8_t>(response.size() & 0xff)};
  if (!connection_->Write({std::span<const uint8_t>(prefix), response})) {
    if (connection_->is_open()) {
      LOG_EVERY_N(WARNING, 1000) << "DNS/TCP to " << peer_address().ToString()
                                 << ": client is not reading; closing";
      connection_->Close(CloseReason::kOutputOverflow);
    }
    return false;
  }
  ++stats_.responses;
  if (outstanding_ > 0) --outstanding_;
  if (framer_.paused() && outstanding_ < options_.max_outstanding_queries &&
      !resume_timer_.IsActive()) {
    // Resume on the next iteration, not from inside Send(): the handler that called Send
    // must not be re-entered with the next query.
    resume_timer_.Start(0, [this] { ResumeFraming(); });
  }
  if (outstanding_ == 0 && peer_done_ && !framer_.paused()) {
    connection_->CloseWhenFlushed();
    return true;
  }
  UpdateIdleTimer();
  return true;
}

void DnsTcpConnection::ResumeFraming() {
  auto result = framer_.Resume([this](std::span<const uint8_t> m) { return OnMessage(m); });
  if (result == DnsTcpFramer::Result::kAbandoned) return;
  if (result == DnsTcpFramer::Result::kBadLength) {
    connection_->Close(CloseReason::kProtocolError);
    return;
  }
  if (framer_.paused()) return;
  if (peer_done_) {
    if (outstanding_ == 0) connection_->CloseWhenFlushed();
    return;
  }
  connection_->ResumeReading();
}

void DnsTcpConnection::UpdateIdleTimer() {
  connection_->SetIdleTimeout(outstanding_ == 0 ? options_.idle_timeout_ms : 0);
}

}  // namespace kdns::loop

#include "common/loop/dns_tcp_connection.h"

#include <glog/logging.h>

#include <optional>
#include <utility>

namespace kdns::loop {

using CloseReason = TcpConnection::CloseReason;

DnsTcpConnection::DnsTcpConnection(Loop& loop, std::unique_ptr<TcpConnection> connection,
                                   const Options& options, QueryCallback on_query,
                                   CloseCallback on_close, OverdueCallback on_overdue)
    : loop_(loop),
      connection_(std::move(connection)),
      options_(options),
      on_query_(std::move(on_query)),
      on_close_(std::move(on_close)),
      on_overdue_(std::move(on_overdue)),
      resume_timer_(loop),
      deadline_timer_(loop, [this] { OnDeadline(); }),
      last_progress_ms_(loop.now_ms()) {
  if (options_.max_outstanding_queries == 0) options_.max_outstanding_queries = 1;
  TcpConnection::Callbacks callbacks;
  callbacks.on_data = [this](std::span<const uint8_t> bytes) { OnData(bytes); };
  callbacks.on_eof = [this] { OnEof(); };
  callbacks.on_close = [this](CloseReason reason) {
    deadline_timer_.Stop();
    resume_timer_.Stop();
    if (on_close_) on_close_(reason);
  };
  connection_->Start(std::move(callbacks));
  connection_->SetIdleTimeout(0);  // any byte would restart it; ours counts messages
  UpdateDeadline();
}

DnsTcpConnection::~DnsTcpConnection() = default;

void DnsTcpConnection::OnData(std::span<const uint8_t> bytes) {
  auto result = framer_.Feed(
      bytes, [this](std::span<const uint8_t> m) { return OnMessage(m); }, loop_.now_ms());
  if (result == DnsTcpFramer::Result::kAbandoned) return;  // this is gone
  if (result == DnsTcpFramer::Result::kBadLength) {
    LOG_EVERY_N(WARNING, 1000) << "DNS/TCP from " << peer_address().ToString()
                               << ": message length below the DNS header; closing";
    connection_->Close(CloseReason::kProtocolError);
    return;
  }
  UpdateDeadline();
}

DnsTcpFramer::Next DnsTcpConnection::OnMessage(std::span<const uint8_t> message) {
  // Only the query that makes the connection busy starts the query clock; later ones wait
  // behind it.
  if (outstanding_++ == 0) last_progress_ms_ = loop_.now_ms();
  ++stats_.queries;
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
  // Queries still buffered (paused at the cap) are answered too; close once all are. A
  // partial message can no longer complete: it is dropped with the connection.
  if (outstanding_ == 0 && !framer_.paused()) connection_->CloseWhenFlushed();
}

bool DnsTcpConnection::Send(std::span<const uint8_t> response) {
  if (response.size() > 65535 || !connection_->is_open()) return false;
  const uint8_t prefix[2] = {static_cast<uint8_t>(response.size() >> 8),
                             static_cast<uint8_t>(response.size() & 0xff)};
  if (!connection_->Write({std::span<const uint8_t>(prefix), response})) {
    // The client is not reading (the owner counts the close by its reason). Write closed
    // the connection itself at the process-wide budget.
    if (connection_->is_open()) connection_->Close(CloseReason::kOutputOverflow);
    return false;
  }
  ++stats_.responses;
  if (outstanding_ > 0) --outstanding_;
  last_progress_ms_ = loop_.now_ms();
  if (framer_.paused() && outstanding_ < options_.max_outstanding_queries &&
      !resume_timer_.IsActive()) {
    // Resume on the next iteration, not from inside Send(): the handler that called Send
    // must not be re-entered with the next query.
    resume_timer_.Start(0, [this] { ResumeFraming(); });
  }
  // Also while the last replies flush after a half-close: a client that never reads them
  // is closed at the idle timeout.
  UpdateDeadline();
  if (outstanding_ == 0 && peer_done_ && !framer_.paused()) connection_->CloseWhenFlushed();
  return true;
}

void DnsTcpConnection::ResumeFraming() {
  auto result =
      framer_.Resume([this](std::span<const uint8_t> m) { return OnMessage(m); }, loop_.now_ms());
  if (result == DnsTcpFramer::Result::kAbandoned) return;  // this is gone
  if (result == DnsTcpFramer::Result::kBadLength) {
    connection_->Close(CloseReason::kProtocolError);
    return;
  }
  if (!framer_.paused()) {
    if (peer_done_) {
      if (outstanding_ == 0) connection_->CloseWhenFlushed();
      return;
    }
    connection_->ResumeReading();
  }
  UpdateDeadline();
}

std::optional<DnsTcpConnection::Deadline> DnsTcpConnection::NextDeadline(const DnsTcpFramer& framer,
                                                                         size_t outstanding,
                                                                         uint64_t last_progress_ms,
                                                                         const Options& options) {
  std::optional<Deadline> next;
  auto consider = [&next](uint64_t at_ms, CloseReason reason) {
    if (!next || at_ms < next->at_ms) next = Deadline{at_ms, reason};
  };
  if (std::optional<uint64_t> since = framer.partial_frame_since_ms()) {
    // A message is arriving: its deadline, not the idle one, applies.
    if (options.frame_timeout_ms > 0) {
      consider(*since + options.frame_timeout_ms, CloseReason::kFrameTimeout);
    }
  } else if (outstanding == 0 && !framer.paused() && options.idle_timeout_ms > 0) {
    consider(last_progress_ms + options.idle_timeout_ms, CloseReason::kIdleTimeout);
  }
  if (outstanding > 0 && options.query_timeout_ms > 0) {
    consider(last_progress_ms + options.query_timeout_ms, CloseReason::kQueryTimeout);
  }
  return next;
}

void DnsTcpConnection::UpdateDeadline() {
  const std::optional<Deadline> deadline =
      NextDeadline(framer_, outstanding_, last_progress_ms_, options_);
  if (!deadline) {
    deadline_timer_.Stop();
    return;
  }
  if (deadline_timer_.IsActive() && armed_deadline_ms_ == deadline->at_ms) return;
  armed_deadline_ms_ = deadline->at_ms;
  const uint64_t now = loop_.now_ms();
  // The callback was set once: Start(ms) is safe from inside it (OnDeadline re-arms).
  deadline_timer_.Start(deadline->at_ms > now ? deadline->at_ms - now : 0);
}

void DnsTcpConnection::OnDeadline() {
  // Closing (or flushing after a half-close) connections too; Close() is idempotent.
  const std::optional<Deadline> deadline =
      NextDeadline(framer_, outstanding_, last_progress_ms_, options_);
  if (deadline && loop_.now_ms() >= deadline->at_ms) {
    if (deadline->reason == CloseReason::kQueryTimeout) return OnQueriesOverdue();
    connection_->Close(deadline->reason);
    return;
  }
  UpdateDeadline();
}

void DnsTcpConnection::OnQueriesOverdue() {
  if (on_overdue_ != nullptr && connection_->is_open()) {
    const uint64_t responses = stats_.responses;
    {
      internal::DeathWatch::Scope scope(death_watch_);
      internal::CallUser("DnsTcpConnection overdue", [&] { on_overdue_(); });
      if (scope.dead()) return;
    }
    // Whatever was answered restarted the clock for what is still outstanding.
    if (stats_.responses != responses || !connection_->is_open()) return UpdateDeadline();
  }
  // Nobody could answer: only closing frees what the queries hold.
  connection_->Close(CloseReason::kQueryTimeout);
}

}  // namespace kdns::loop

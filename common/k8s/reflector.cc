#include "common/k8s/reflector.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace kdns::k8s {

std::string_view ToString(RestartReason reason) {
  switch (reason) {
    case RestartReason::kClosed:
      return "closed";
    case RestartReason::kTransport:
      return "transport";
    case RestartReason::kExpired:
      return "expired";
    case RestartReason::kHttpError:
      return "http_error";
    case RestartReason::kErrorEvent:
      return "error_event";
    case RestartReason::kStall:
      return "stall";
    case RestartReason::kMalformed:
      return "malformed";
  }
  return "?";
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    bool unreserved = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                      (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' || byte == '_' ||
                      byte == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  return out;
}

Reflector::Reflector(ApiTransport& transport, TimerFactory& timers, const Clock& clock,
                     ReflectorHandler& handler, ReflectorOptions options)
    : transport_(transport),
      clock_(clock),
      handler_(handler),
      options_(std::move(options)),
      random_(options_.random ? options_.random : DefaultRandom()),
      backoff_(options_.backoff, random_),
      retry_timer_(timers.NewTimer()),
      stall_timer_(timers.NewTimer()) {
  CHECK(!options_.path.empty() && options_.path.front() == '/') << "bad path " << options_.path;
  CHECK_GT(options_.page_size, 0u);
  CHECK_LE(options_.watch_timeout_min_s, options_.watch_timeout_max_s);
  CHECK_GT(options_.stall_timeout_ms, 0u);
}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  CHECK(state_ == State::kIdle) << Describe() << ": Start called twice";
  BeginList();
}

void Reflector::Stop() {
  if (state_ == State::kStopped) return;
  CancelRequest();
  retry_timer_->Stop();
  state_ = State::kStopped;
}

std::string Reflector::Describe() const {
  size_t slash = options_.path.rfind('/');
  return "k8s " + options_.path.substr(slash + 1);
}

const std::string& Reflector::path() const {
  return path_index_ == 0 ? options_.path : options_.other_paths[path_index_ - 1];
}

void Reflector::CancelRequest() {
  if (request_) transport_.Cancel(*request_);
  request_.reset();
  ++attempt_;
  stall_timer_->Stop();
}

std::string Reflector::DescribeStatus(int status, const std::string& body,
                                      std::optional<uint32_t>* retry_after_s) {
  auto decoded = DecodeStatus(body);
  if (!decoded.ok()) return "HTTP " + std::to_string(status);
  if (retry_after_s != nullptr && !*retry_after_s && decoded->retry_after_seconds &&
      *decoded->retry_after_seconds >= 0) {
    *retry_after_s = static_cast<uint32_t>(*decoded->retry_after_seconds);
  }
  if (decoded->code != status) return "HTTP " + std::to_string(status) + ", " + decoded->Summary();
  return "HTTP " + decoded->Summary();  // "HTTP 500: resourceVersion: Invalid value ..."
}

void Reflector::Healthy() {
  backoff_.Succeeded(clock_.NowMs());
  if (healthy_) return;
  healthy_ = true;
  handler_.OnHealthy();
}

void Reflector::Error(const ReflectorError& error) {
  ++stats_.errors[error.code];
  healthy_ = false;
  if (options_.quiet_not_found && error.http_status == 404) {
    handler_.OnError(error);  // the handler says once that the resource is absent
    return;
  }
  uint64_t now_ms = clock_.NowMs();
  if (!error_logged_ || now_ms - last_error_log_ms_ >= options_.error_log_interval_ms) {
    LOG(WARNING) << error.message
                 << (errors_not_logged_ > 0
                         ? " (and " + std::to_string(errors_not_logged_) + " more errors)"
                         : "");
    error_logged_ = true;
    last_error_log_ms_ = now_ms;
    errors_not_logged_ = 0;
  } else {
    ++errors_not_logged_;
  }
  handler_.OnError(error);
}

void Reflector::Retry(Next next, Delay delay_kind, std::optional<RestartReason> reason,
                      std::optional<uint32_t> retry_after_s) {
  if (state_ == State::kStopped) return;
  // A watch-list that ends before its list does is asked again whole.
  if (initial_events_ && next == Next::kWatch) next = Next::kList;
  initial_events_ = false;
  if (reason) {
    ++stats_.restarts[static_cast<size_t>(*reason)];
    if (*reason == RestartReason::kExpired) ++stats_.relists;
    handler_.OnRestart(*reason);
    if (state_ == State::kStopped) return;
  }
  uint64_t delay_ms = 0;
  if (delay_kind != Delay::kNow) {
    delay_ms = backoff_.Failed(clock_.NowMs());
    // The first re-LIST after a quiet time waits a random part of the jitter bound, so
    // replicas that all got a 410 at once spread their LISTs; repeated ones back off.
    if (delay_kind == Delay::kJittered && backoff_.failures() == 1) {
      delay_ms = static_cast<uint64_t>(std::floor(std::clamp(random_(), 0.0, 1.0) *
                                                  static_cast<double>(options_.relist_jitter_ms)));
    }
  }
  if (retry_after_s) {
    delay_ms = std::min<uint64_t>(uint64_t{*retry_after_s} * 1000, options_.max_retry_after_ms);
  }
  if (delay_ms == 0) {
    RunNext(next);
    return;
  }
  state_ = State::kWaiting;
  retry_delay_ms_ = delay_ms;
  retry_timer_->Start(delay_ms, [this, next] {
    retry_delay_ms_ = 0;
    RunNext(next);
  });
}

void Reflector::RunNext(Next next) {
  switch (next) {
    case Next::kList:
      BeginList();
      return;
    case Next::kListPage:
      SendListPage();
      return;
    case Next::kWatch:
      StartWatch();
      return;
  }
}

}  // namespace kdns::k8s

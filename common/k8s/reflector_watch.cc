// Reflector's WATCH (reflector.h, "Life cycle" and "How a watch ends"): the watch request,
// its body split into lines and each line applied, and how a watch ends (closed, cut,
// expired, stalled) and what follows.
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <utility>
#include <variant>

#include "common/k8s/reflector.h"

namespace kdns::k8s {

void Reflector::StartWatch(bool initial_events) {
  state_ = State::kWatching;
  initial_events_ = initial_events;
  uint32_t span = options_.watch_timeout_max_s - options_.watch_timeout_min_s;
  double unit = std::clamp(random_(), 0.0, 1.0);
  uint32_t timeout_s = options_.watch_timeout_min_s +
                       std::min(span, static_cast<uint32_t>(std::floor(unit * (span + 1.0))));
  std::string path = this->path() + "?watch=1&allowWatchBookmarks=true";
  if (initial_events) {
    path += "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    if (!list_rv_.empty()) path += "&resourceVersion=" + UrlEncode(list_rv_);
  } else {
    path += "&resourceVersion=" + UrlEncode(stats_.resource_version.text);
  }
  path += "&timeoutSeconds=" + std::to_string(timeout_s);
  if (!options_.label_selector.empty())
    path += "&labelSelector=" + UrlEncode(options_.label_selector);
  head_ = ApiResponseHead{};
  body_.clear();
  line_.clear();
  watch_lines_ = 0;
  watch_started_ms_ = last_byte_ms_ = clock_.NowMs();
  ++stats_.watches;
  uint64_t attempt = ++attempt_;
  ApiTransport::Callbacks callbacks;
  callbacks.on_head = [this, attempt](const ApiResponseHead& head) {
    if (attempt == attempt_) OnWatchHead(head);
  };
  callbacks.on_body = [this, attempt](std::string_view piece) {
    if (attempt == attempt_) OnWatchBody(piece);
  };
  callbacks.on_done = [this, attempt](const ApiResult& result) {
    if (attempt != attempt_) return;
    request_.reset();
    ++attempt_;
    stall_timer_->Stop();
    OnWatchDone(result);
  };
  request_ = transport_.Get(path, std::move(callbacks), 0);
  stall_timer_->Start(options_.stall_timeout_ms, [this] { OnStallTimer(); });
}

void Reflector::OnWatchHead(const ApiResponseHead& head) {
  head_ = head;
  last_byte_ms_ = clock_.NowMs();
  if (head.status != 200) return;
  if (initial_events_) {
    list_objects_ = 0;
    handler_.OnListBegin();
    return;  // healthy once the list is complete
  }
  Healthy();
}

void Reflector::OnWatchBody(std::string_view piece) {
  last_byte_ms_ = clock_.NowMs();
  if (head_.status != 200) {
    size_t room = kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, body_.size());
    body_.append(piece.substr(0, room));
    return;
  }
  const uint64_t attempt = attempt_;
  while (!piece.empty()) {
    size_t newline = piece.find('\n');
    std::string_view part = piece.substr(0, newline);
    if (line_.size() + part.size() > options_.max_line_bytes) {
      uint64_t length = line_.size() + part.size();
      CancelRequest();
      line_.clear();
      ++stats_.malformed_lines;
      Error({ReflectorPhase::kWatch, "decode", 0,
             Describe() + ": watch line longer than " + std::to_string(options_.max_line_bytes) +
                 " bytes (" + std::to_string(length) + " so far)"});
      Retry(Next::kList, Delay::kBackoff, RestartReason::kMalformed, std::nullopt);
      return;
    }
    if (newline == std::string_view::npos) {
      line_.append(part);
      return;
    }
    piece.remove_prefix(newline + 1);
    bool go_on;
    if (line_.empty()) {
      go_on = ProcessLine(part);
    } else {
      line_.append(part);
      std::string line = std::move(line_);
      line_.clear();
      go_on = ProcessLine(line);
    }
    if (!go_on || attempt != attempt_) return;
  }
}

bool Reflector::ProcessLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return true;
  ++watch_lines_;
  const auto received = std::chrono::steady_clock::now();
  const uint64_t attempt = attempt_;
  auto event = DecodeWatchEvent(line, options_.kind);
  if (!event.ok()) {
    CancelRequest();
    ++stats_.malformed_lines;
    Error({ReflectorPhase::kWatch, "decode", 0,
           Describe() + ": malformed watch line of " + std::to_string(line.size()) +
               " bytes: " + event.error() + "; listing again"});
    Retry(Next::kList, Delay::kBackoff, RestartReason::kMalformed, std::nullopt);
    return false;
  }
  const uint64_t now_ms = clock_.NowMs();
  switch (event->type) {
    case EventType::kBookmark:
      ++stats_.bookmarks;
      if (initial_events_ && event->initial_events_end) {
        // The watch-list's objects are all in: the list is complete, the watch goes on.
        initial_events_ = false;
        ListMeta meta;
        meta.resource_version = event->meta.resource_version;
        CompleteList(meta, /*start_watch=*/false);
        return attempt == attempt_ && state_ == State::kWatching;
      }
      if (!event->meta.resource_version.empty()) {
        stats_.resource_version = event->meta.resource_version;
      }
      stats_.last_progress_ms = now_ms;
      silent_stalls_ = 0;
      handler_.OnBookmark(event->meta.resource_version);
      return attempt == attempt_ && state_ == State::kWatching;
    case EventType::kError: {
      CancelRequest();
      const Status& status = event->status;
      if (status.IsExpired()) {
        // A watch from a too-old RV is an HTTP 200 with this one event (capture 05b).
        LOG(INFO) << Describe() << ": watch from resourceVersion " << stats_.resource_version.text
                  << " expired (" << status.Summary() << "); listing again";
        Retry(Next::kList, Delay::kJittered, RestartReason::kExpired, std::nullopt);
        return false;
      }
      Error({ReflectorPhase::kWatch, status.code > 0 ? std::to_string(status.code) : "error_event",
             status.code, Describe() + ": watch ERROR event: " + status.Summary()});
      std::optional<uint32_t> retry_after;
      if (status.retry_after_seconds && *status.retry_after_seconds >= 0) {
        retry_after = static_cast<uint32_t>(*status.retry_after_seconds);
      }
      Retry(Next::kWatch, Delay::kBackoff, RestartReason::kErrorEvent, retry_after);
      return false;
    }
    case EventType::kAdded:
      ++stats_.added;
      break;
    case EventType::kModified:
      ++stats_.modified;
      break;
    case EventType::kDeleted:
      ++stats_.deleted;
      break;
  }
  if (!event->object_error.empty()) {
    Error({ReflectorPhase::kWatch, "decode", 0,
           Describe() + ": " + std::string(ToString(event->type)) + " " + event->meta.ns + "/" +
               event->meta.name + " at resourceVersion " + event->meta.resource_version.text +
               " did not decode (" + event->object_error + "); dropping it"});
    if (attempt != attempt_ || state_ != State::kWatching) return false;
    if (initial_events_ && event->type == EventType::kAdded) return true;
    event->type = EventType::kDeleted;
  }
  if (initial_events_ && event->type == EventType::kAdded) {
    // An object of the watch-list's initial state (one that did not decode was reported
    // above and is left out, as a LIST leaves out a bad item).
    last_byte_ms_ = now_ms;
    if (std::holds_alternative<std::monostate>(event->object)) return true;
    ++list_objects_;
    handler_.OnListObject(std::move(event->object));
    return attempt == attempt_ && state_ == State::kWatching;
  }
  if (!event->meta.resource_version.empty()) {
    stats_.resource_version = event->meta.resource_version;
  }
  stats_.last_progress_ms = now_ms;
  silent_stalls_ = 0;
  handler_.OnEvent(*event, received);
  return attempt == attempt_ && state_ == State::kWatching;
}

void Reflector::OnWatchDone(const ApiResult& result) {
  std::string partial = std::move(line_);
  line_.clear();
  if (initial_events_) {
    initial_events_ = false;
    int status = head_.status != 0 ? head_.status : result.status;
    bool refused = result.ok() && status >= 400 && status < 500 && status != 410 && status != 429;
    if (result.ok() && (status == 200 || refused)) {
      // Refused (1.25: 422), or ended before its end bookmark (a server that ignores
      // sendInitialEvents): LIST from now on, at once.
      std::string what = status == 200 ? std::string("ended before its initial-events-end bookmark")
                                       : DescribeStatus(status, body_, nullptr);
      body_.clear();
      LOG(WARNING) << Describe() << ": the API server does not serve watch-lists (" << what
                   << "); listing instead";
      watch_list_refused_ = true;
      RunNext(Next::kList);
      return;
    }
    if (result.ok() && status != 410) {
      std::optional<uint32_t> retry_after = head_.retry_after_s;
      std::string what = DescribeStatus(status, body_, &retry_after);
      body_.clear();
      Error({ReflectorPhase::kList, std::to_string(status), status,
             Describe() + ": watch-list: " + what});
      Retry(Next::kList, Delay::kBackoff, std::nullopt, retry_after);
      return;
    }
    if (!result.ok()) {
      Error({ReflectorPhase::kList, "transport", 0,
             Describe() + ": watch-list: " + result.transport_error});
      Retry(Next::kList, Delay::kBackoff, std::nullopt, std::nullopt);
      return;
    }
    // 410: as any other 410 below.
  }
  if (!result.ok()) {
    Error({ReflectorPhase::kWatch, "transport", 0,
           Describe() + ": watch from resourceVersion " + stats_.resource_version.text + ": " +
               result.transport_error +
               (partial.empty() ? ""
                                : " (dropped a partial line of " + std::to_string(partial.size()) +
                                      " bytes)")});
    Retry(Next::kWatch, Delay::kBackoff, RestartReason::kTransport, std::nullopt);
    return;
  }
  int status = head_.status != 0 ? head_.status : result.status;
  if (status == 200) {
    if (!partial.empty()) {
      Error({ReflectorPhase::kWatch, "transport", 0,
             Describe() + ": watch ended inside a line (" + std::to_string(partial.size()) +
                 " bytes dropped)"});
      Retry(Next::kWatch, Delay::kBackoff, RestartReason::kTransport, std::nullopt);
      return;
    }
    // A server (or proxy) that closes every watch at once must not make us spin.
    bool too_short =
        watch_lines_ == 0 && clock_.NowMs() - watch_started_ms_ < options_.min_watch_ms;
    Retry(Next::kWatch, too_short ? Delay::kBackoff : Delay::kNow, RestartReason::kClosed,
          std::nullopt);
    return;
  }
  if (status == 410) {
    LOG(INFO) << Describe() << ": watch from resourceVersion " << stats_.resource_version.text
              << " answered 410 Gone; listing again";
    Retry(Next::kList, Delay::kJittered, RestartReason::kExpired, std::nullopt);
    return;
  }
  std::optional<uint32_t> retry_after = head_.retry_after_s;
  std::string what = DescribeStatus(status, body_, &retry_after);
  body_.clear();
  Error({ReflectorPhase::kWatch, std::to_string(status), status, Describe() + ": watch: " + what});
  Retry(Next::kWatch, Delay::kBackoff, RestartReason::kHttpError, retry_after);
}

void Reflector::OnStallTimer() {
  uint64_t idle_ms = clock_.NowMs() - last_byte_ms_;
  if (idle_ms < options_.stall_timeout_ms) {
    stall_timer_->Start(options_.stall_timeout_ms - idle_ms, [this] { OnStallTimer(); });
    return;
  }
  bool silent = watch_lines_ == 0;
  CancelRequest();
  line_.clear();
  healthy_ = false;
  silent_stalls_ = silent ? silent_stalls_ + 1 : 0;
  // Two silent watches in a row: the RV may be one the server has not reached (after an etcd
  // restore), where a watch hangs without even a bookmark (capture 06-watch-rv-too-large).
  bool relist = silent_stalls_ >= 2;
  if (relist) silent_stalls_ = 0;
  LOG(WARNING) << Describe() << ": watch from resourceVersion " << stats_.resource_version.text
               << " got no data for " << idle_ms << " ms; "
               << (relist ? "listing again" : "watching again");
  Retry(relist ? Next::kList : Next::kWatch, relist ? Delay::kJittered : Delay::kNow,
        RestartReason::kStall, std::nullopt);
}

}  // namespace kdns::k8s

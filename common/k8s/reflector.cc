#include "common/k8s/reflector.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <utility>

namespace kdns::k8s {
namespace {

// Error bodies (Status objects) are small; a larger one is cut, only its message matters.
constexpr size_t kMaxErrorBodyBytes = 64 * 1024;

// Adds a LIST page's items. Growth is geometric (insert), never an exact reserve per page,
// which would move the whole list on every page: quadratic over a 1M-item LIST.
template <typename T>
void Append(std::vector<T>& to, std::vector<T>& from) {
  if (to.empty()) {
    to = std::move(from);
    return;
  }
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// On the first page, room for the items the server says remain (remainingItemCount), so a
// long LIST is allocated once. Capped: the count comes from the network.
template <typename T>
void ReserveRemaining(std::vector<T>& items, std::optional<int64_t> remaining) {
  constexpr int64_t kMaxReserve = int64_t{1} << 22;
  if (items.empty() || !remaining || *remaining <= 0) return;
  items.reserve(items.size() + static_cast<size_t>(std::min(*remaining, kMaxReserve)));
}

// "500 InternalError: ..." from a Status body, or the status alone when it is not one.
std::string DescribeStatus(int status, const std::string& body,
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

}  // namespace

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

// ---- LIST ----------------------------------------------------------------------------------

void Reflector::BeginList() {
  pending_list_ = ObjectList{};
  continue_token_.clear();
  SendListPage();
}

void Reflector::SendListPage() {
  state_ = State::kListing;
  std::string path = this->path() + "?limit=" + std::to_string(options_.page_size);
  if (!options_.label_selector.empty())
    path += "&labelSelector=" + UrlEncode(options_.label_selector);
  if (!continue_token_.empty()) path += "&continue=" + UrlEncode(continue_token_);
  head_ = ApiResponseHead{};
  body_.clear();
  uint64_t attempt = ++attempt_;
  ApiTransport::Callbacks callbacks;
  callbacks.on_head = [this, attempt](const ApiResponseHead& head) {
    if (attempt == attempt_) head_ = head;
  };
  callbacks.on_body = [this, attempt](std::string_view piece) {
    if (attempt != attempt_) return;
    if (head_.status != 200) {
      size_t room = kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, body_.size());
      body_.append(piece.substr(0, room));
      return;
    }
    if (body_.size() + piece.size() > options_.max_list_page_bytes) {
      CancelRequest();
      body_.clear();
      Error({ReflectorPhase::kList, "decode", 0,
             Describe() + ": list page larger than " +
                 std::to_string(options_.max_list_page_bytes) + " bytes"});
      Retry(Next::kList, Delay::kBackoff, std::nullopt, std::nullopt);
      return;
    }
    body_.append(piece);
  };
  callbacks.on_done = [this, attempt](const ApiResult& result) {
    if (attempt != attempt_) return;
    request_.reset();
    ++attempt_;
    OnListDone(result);
  };
  request_ = transport_.Get(path, std::move(callbacks), options_.list_timeout_ms);
}

void Reflector::OnListDone(const ApiResult& result) {
  std::string body = std::move(body_);
  body_.clear();
  if (!result.ok()) {
    Error(
        {ReflectorPhase::kList, "transport", 0, Describe() + ": list: " + result.transport_error});
    Retry(Next::kListPage, Delay::kBackoff, std::nullopt, std::nullopt);
    return;
  }
  int status = head_.status != 0 ? head_.status : result.status;
  if (status == 200) {
    auto page = DecodeList(body);
    if (!page.ok()) {
      Error({ReflectorPhase::kList, "decode", 0, Describe() + ": list: " + page.error()});
      Retry(Next::kList, Delay::kBackoff, std::nullopt, std::nullopt);
      return;
    }
    ++stats_.list_pages;
    if (page->bad_items > 0) {
      std::string first = page->warnings.messages().empty() ? "" : page->warnings.messages()[0];
      Error({ReflectorPhase::kList, "decode", 0,
             Describe() + ": list: skipped " + std::to_string(page->bad_items) +
                 " item(s) that did not decode: " + first});
      if (state_ == State::kStopped) return;
    }
    std::string next_token = page->meta.continue_token;
    if (continue_token_.empty()) {
      pending_list_ = std::move(*page);
      const std::optional<int64_t> remaining = pending_list_.meta.remaining_item_count;
      ReserveRemaining(pending_list_.services, remaining);
      ReserveRemaining(pending_list_.endpoint_slices, remaining);
      ReserveRemaining(pending_list_.endpoints, remaining);
      ReserveRemaining(pending_list_.pods, remaining);
      ReserveRemaining(pending_list_.service_imports, remaining);
      ReserveRemaining(pending_list_.kubeslice_service_imports, remaining);
    } else {
      // Every page carries the first page's RV; keep the first page's meta.
      Append(pending_list_.services, page->services);
      Append(pending_list_.endpoint_slices, page->endpoint_slices);
      Append(pending_list_.endpoints, page->endpoints);
      Append(pending_list_.pods, page->pods);
      Append(pending_list_.service_imports, page->service_imports);
      Append(pending_list_.kubeslice_service_imports, page->kubeslice_service_imports);
      pending_list_.bad_items += page->bad_items;
      pending_list_.other_items += page->other_items;
    }
    continue_token_ = std::move(next_token);
    if (!continue_token_.empty()) {
      SendListPage();
      return;
    }
    CompleteList();
    return;
  }
  if (status == 410) {
    // A continue token that etcd compaction has expired (capture 05a-list-continue-expired).
    LOG(INFO) << Describe() << ": list continue token expired; listing again from the start";
    Retry(Next::kList, Delay::kFirstFree, RestartReason::kExpired, std::nullopt);
    return;
  }
  std::optional<uint32_t> retry_after = head_.retry_after_s;
  std::string what = DescribeStatus(status, body, &retry_after);
  Error({ReflectorPhase::kList, std::to_string(status), status, Describe() + ": list: " + what});
  if (status == 404 && !options_.other_paths.empty() && state_ != State::kStopped) {
    // Not served here: the next attempt tries the resource's next group/version, from page 1.
    path_index_ = (path_index_ + 1) % (options_.other_paths.size() + 1);
    Retry(Next::kList, Delay::kBackoff, std::nullopt, retry_after);
    return;
  }
  Retry(Next::kListPage, Delay::kBackoff, std::nullopt, retry_after);
}

void Reflector::CompleteList() {
  ObjectList list = std::move(pending_list_);
  pending_list_ = ObjectList{};
  uint64_t now_ms = clock_.NowMs();
  stats_.resource_version = list.meta.resource_version;
  stats_.synced = true;
  stats_.last_sync_ms = now_ms;
  stats_.last_progress_ms = now_ms;
  ++stats_.lists;
  size_t objects = list.services.size() + list.endpoint_slices.size() + list.endpoints.size() +
                   list.pods.size() + list.service_imports.size() +
                   list.kubeslice_service_imports.size();
  LOG(INFO) << Describe() << ": listed " << objects << " objects at resourceVersion "
            << list.meta.resource_version.text;
  if (list.meta.resource_version.empty()) {
    LOG(WARNING) << Describe() << ": the list has no resourceVersion; the watch starts from now";
  }
  Healthy();
  if (state_ == State::kStopped) return;
  handler_.OnList(std::move(list));
  if (state_ == State::kStopped) return;
  silent_stalls_ = 0;
  StartWatch();
}

// ---- WATCH ---------------------------------------------------------------------------------

void Reflector::StartWatch() {
  state_ = State::kWatching;
  uint32_t span = options_.watch_timeout_max_s - options_.watch_timeout_min_s;
  double unit = std::clamp(random_(), 0.0, 1.0);
  uint32_t timeout_s = options_.watch_timeout_min_s +
                       std::min(span, static_cast<uint32_t>(std::floor(unit * (span + 1.0))));
  std::string path = this->path() + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                     UrlEncode(stats_.resource_version.text) +
                     "&timeoutSeconds=" + std::to_string(timeout_s);
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
  if (head.status == 200) Healthy();
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
        Retry(Next::kList, Delay::kFirstFree, RestartReason::kExpired, std::nullopt);
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
    event->type = EventType::kDeleted;
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
    Retry(Next::kList, Delay::kFirstFree, RestartReason::kExpired, std::nullopt);
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
  Retry(relist ? Next::kList : Next::kWatch, Delay::kNow, RestartReason::kStall, std::nullopt);
}

// ---- Shared --------------------------------------------------------------------------------

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
  if (reason) {
    ++stats_.restarts[static_cast<size_t>(*reason)];
    if (*reason == RestartReason::kExpired) ++stats_.relists;
    handler_.OnRestart(*reason);
    if (state_ == State::kStopped) return;
  }
  uint64_t delay_ms = 0;
  if (delay_kind != Delay::kNow) {
    delay_ms = backoff_.Failed(clock_.NowMs());
    // The first re-LIST after a quiet time is free; repeated ones back off.
    if (delay_kind == Delay::kFirstFree && backoff_.failures() == 1) delay_ms = 0;
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

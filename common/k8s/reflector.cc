#include "common/k8s/reflector.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <utility>
#include <variant>

namespace kdns::k8s {
namespace {

// Error bodies (Status objects) are small; a larger one is cut, only its message matters.
constexpr size_t kMaxErrorBodyBytes = 64 * 1024;

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

void ReflectorHandler::OnListObject(Object&& object) {
  if (auto* service = std::get_if<Service>(&object)) {
    collected_.services.push_back(std::move(*service));
  } else if (auto* slice = std::get_if<EndpointSlice>(&object)) {
    collected_.endpoint_slices.push_back(std::move(*slice));
  } else if (auto* endpoints = std::get_if<Endpoints>(&object)) {
    collected_.endpoints.push_back(std::move(*endpoints));
  } else if (auto* pod = std::get_if<Pod>(&object)) {
    collected_.pods.push_back(std::move(*pod));
  } else if (auto* import = std::get_if<ServiceImport>(&object)) {
    collected_.service_imports.push_back(std::move(*import));
  } else if (auto* slice_import = std::get_if<KubesliceServiceImport>(&object)) {
    collected_.kubeslice_service_imports.push_back(std::move(*slice_import));
  }
}

void ReflectorHandler::OnListEnd(const ListMeta& meta) {
  ObjectList list = std::move(collected_);
  collected_ = ObjectList{};
  list.meta = meta;
  OnList(std::move(list));
}

void Reflector::BeginList() {
  continue_token_.clear();
  list_rv_ = consistent_list_                  ? ""
             : stats_.resource_version.empty() ? "0"
                                               : stats_.resource_version.text;
  skip_objects_ = 0;
  if (options_.watch_list && !watch_list_refused_ && !consistent_list_) {
    StartWatch(/*initial_events=*/true);
    return;
  }
  SendListPage();
}

void Reflector::SendListPage() {
  state_ = State::kListing;
  std::string path = this->path() + "?";
  const bool first_page = continue_token_.empty();
  // See the header: rv=0 and rv=<n> are served from the watch cache, which ignores limit
  // (and with rv=<n>, a limit would send a 1.25 server to etcd).
  const bool cached = first_page && !list_rv_.empty();
  if (cached) {
    path += "resourceVersion=" + UrlEncode(list_rv_);
    if (list_rv_ != "0") path += "&resourceVersionMatch=NotOlderThan";
  }
  if (!cached || list_rv_ == "0" || paginated_) {
    path += std::string(cached ? "&" : "") + "limit=" + std::to_string(options_.page_size);
  }
  if (!options_.label_selector.empty())
    path += "&labelSelector=" + UrlEncode(options_.label_selector);
  if (!first_page) path += "&continue=" + UrlEncode(continue_token_);
  if (first_page && cached) ++stats_.cache_lists;
  head_ = ApiResponseHead{};
  body_.clear();
  decoder_.reset();
  page_objects_ = 0;
  uint64_t attempt = ++attempt_;
  ApiTransport::Callbacks callbacks;
  callbacks.on_head = [this, attempt](const ApiResponseHead& head) {
    if (attempt == attempt_) OnListHead(head);
  };
  callbacks.on_body = [this, attempt](std::string_view piece) {
    if (attempt == attempt_) OnListBody(piece);
  };
  callbacks.on_done = [this, attempt](const ApiResult& result) {
    if (attempt != attempt_) return;
    request_.reset();
    ++attempt_;
    stall_timer_->Stop();
    OnListDone(result);
  };
  request_ = transport_.Get(path, std::move(callbacks), 0);
  last_byte_ms_ = clock_.NowMs();
  stall_timer_->Start(options_.list_timeout_ms, [this] { OnListStall(); });
}

void Reflector::OnListStall() {
  uint64_t idle_ms = clock_.NowMs() - last_byte_ms_;
  if (idle_ms < options_.list_timeout_ms) {
    stall_timer_->Start(options_.list_timeout_ms - idle_ms, [this] { OnListStall(); });
    return;
  }
  CancelRequest();
  decoder_.reset();
  body_.clear();
  // The same page again; what it delivered so far is not delivered twice.
  if (!continue_token_.empty()) skip_objects_ = std::max(skip_objects_, page_objects_);
  Error({ReflectorPhase::kList, "transport", 0,
         Describe() + ": list: no data for " + std::to_string(idle_ms) + " ms"});
  Retry(Next::kListPage, Delay::kBackoff, std::nullopt, std::nullopt);
}

void Reflector::OnListHead(const ApiResponseHead& head) {
  head_ = head;
  last_byte_ms_ = clock_.NowMs();
  if (head.status != 200) return;
  const uint64_t attempt = attempt_;
  decoder_ = std::make_unique<ListStreamDecoder>(
      [this, attempt](Object&& object) { return OnListObject(std::move(object), attempt); },
      options_.max_list_item_bytes);
  if (continue_token_.empty()) {
    list_objects_ = 0;
    handler_.OnListBegin();
  }
}

bool Reflector::OnListObject(Object&& object, uint64_t attempt) {
  ++page_objects_;
  if (page_objects_ <= skip_objects_) return true;  // delivered by a failed try of this page
  ++list_objects_;
  handler_.OnListObject(std::move(object));
  return attempt == attempt_ && state_ == State::kListing;
}

void Reflector::OnListBody(std::string_view piece) {
  last_byte_ms_ = clock_.NowMs();
  if (head_.status != 200) {
    size_t room = kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, body_.size());
    body_.append(piece.substr(0, room));
    return;
  }
  if (decoder_->Feed(piece)) return;
  if (decoder_->error().empty()) return;  // the handler stopped us
  std::string error = decoder_->error();
  CancelRequest();
  decoder_.reset();
  Error({ReflectorPhase::kList, "decode", 0, Describe() + ": list: " + error});
  Retry(Next::kList, Delay::kBackoff, std::nullopt, std::nullopt);
}

void Reflector::OnListDone(const ApiResult& result) {
  std::unique_ptr<ListStreamDecoder> decoder = std::move(decoder_);
  if (!result.ok()) {
    Error(
        {ReflectorPhase::kList, "transport", 0, Describe() + ": list: " + result.transport_error});
    // The same page again; what it delivered so far is not delivered twice.
    if (!continue_token_.empty()) skip_objects_ = std::max(skip_objects_, page_objects_);
    Retry(Next::kListPage, Delay::kBackoff, std::nullopt, std::nullopt);
    return;
  }
  int status = head_.status != 0 ? head_.status : result.status;
  if (status == 200 && decoder != nullptr) {
    if (!decoder->Finish()) {
      Error({ReflectorPhase::kList, "decode", 0, Describe() + ": list: " + decoder->error()});
      Retry(Next::kList, Delay::kBackoff, std::nullopt, std::nullopt);
      return;
    }
    ++stats_.list_pages;
    skip_objects_ = 0;
    if (decoder->bad_items() > 0) {
      const auto& messages = decoder->warnings().messages();
      std::string first = messages.empty() ? "" : messages[0];
      Error({ReflectorPhase::kList, "decode", 0,
             Describe() + ": list: skipped " + std::to_string(decoder->bad_items()) +
                 " item(s) that did not decode: " + first});
      if (state_ == State::kStopped) return;
    }
    const ListMeta& meta = decoder->meta();
    if (!meta.continue_token.empty()) {
      paginated_ = true;
      continue_token_ = meta.continue_token;
      SendListPage();
      return;
    }
    // Every page carries the first page's RV.
    CompleteList(meta);
    return;
  }
  if (status == 200) status = 0;  // a 200 with no head: cannot happen with a real transport
  std::optional<uint32_t> retry_after = head_.retry_after_s;
  auto decoded = DecodeStatus(body_);
  const bool too_large =
      decoded.ok() &&
      std::any_of(decoded->causes.begin(), decoded->causes.end(), [](const StatusCause& cause) {
        return cause.reason == "ResourceVersionTooLarge";
      });
  if (status == 410 || too_large) {
    // A continue token that etcd compaction has expired (capture 05a-list-continue-expired),
    // or an rv the watch cache cannot serve (too old, or newer than it has seen, capture
    // 06-list-rv-too-large): list again from the start, consistently from etcd.
    LOG(INFO) << Describe() << ": list "
              << (continue_token_.empty() ? "at resourceVersion " + list_rv_
                                          : std::string("continue token"))
              << (too_large ? " is ahead of the server" : " expired")
              << "; listing again from the start, from etcd";
    consistent_list_ = true;
    body_.clear();
    Retry(Next::kList, Delay::kJittered, RestartReason::kExpired, std::nullopt);
    return;
  }
  std::string what = DescribeStatus(status, body_, &retry_after);
  body_.clear();
  Error({ReflectorPhase::kList, std::to_string(status), status, Describe() + ": list: " + what});
  if (status == 404 && !options_.other_paths.empty() && state_ != State::kStopped) {
    // Not served here: the next attempt tries the resource's next group/version, from page 1.
    path_index_ = (path_index_ + 1) % (options_.other_paths.size() + 1);
    Retry(Next::kList, Delay::kBackoff, std::nullopt, retry_after);
    return;
  }
  Retry(Next::kListPage, Delay::kBackoff, std::nullopt, retry_after);
}

void Reflector::CompleteList(const ListMeta& meta, bool start_watch) {
  uint64_t now_ms = clock_.NowMs();
  stats_.resource_version = meta.resource_version;
  stats_.synced = true;
  stats_.last_sync_ms = now_ms;
  stats_.last_progress_ms = now_ms;
  ++stats_.lists;
  continue_token_.clear();
  consistent_list_ = false;  // the next LIST asks the watch cache for at least what we saw
  LOG(INFO) << Describe() << ": listed " << list_objects_ << " objects at resourceVersion "
            << meta.resource_version.text;
  if (meta.resource_version.empty()) {
    LOG(WARNING) << Describe() << ": the list has no resourceVersion; the watch starts from now";
  }
  Healthy();
  if (state_ == State::kStopped) return;
  handler_.OnListEnd(meta);
  if (state_ == State::kStopped || !start_watch) return;
  silent_stalls_ = 0;
  StartWatch();
}

// ---- WATCH ---------------------------------------------------------------------------------

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

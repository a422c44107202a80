// Reflector's LIST (reflector.h, "Life cycle"): the pages of a LIST, or the initial events
// of a watch-list, handed to the handler as they decode; the failures of a LIST and what
// follows them; the end of a LIST, which starts the watch.
#include <glog/logging.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <variant>

#include "common/k8s/reflector.h"

namespace kdns::k8s {

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

}  // namespace kdns::k8s

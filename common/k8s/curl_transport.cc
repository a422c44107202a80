#include "common/k8s/curl_transport.h"

#include <glog/logging.h>
#include <strings.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <limits>
#include <mutex>
#include <string_view>
#include <system_error>
#include <utility>

namespace kdns::k8s {

using loop::internal::CallUser;
using loop::internal::DeathWatch;

struct CurlTransport::Request {
  RequestId id = 0;
  CurlTransport* transport = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  Callbacks callbacks;
  uint64_t timeout_ms = 0;
  ApiResponseHead head;
  bool head_delivered = false;
  bool cancelled = false;  // by Cancel() from inside curl: no more callbacks
  bool added = false;      // to the multi handle
  std::string failure;     // set up failed: reported by the deferred timer
  char error[CURL_ERROR_SIZE] = {};

  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    curl_slist_free_all(headers);  // after the easy handle, which points at it
  }
};

namespace {

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

std::string_view TrimView(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// Retry-After (RFC 9110 section 10.2.3): delay-seconds or an HTTP-date.
std::optional<uint32_t> ParseRetryAfter(std::string_view value) {
  uint64_t seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc() && end == value.data() + value.size()) {
    return static_cast<uint32_t>(std::min<uint64_t>(seconds, std::numeric_limits<uint32_t>::max()));
  }
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<uint32_t>::max();
  time_t when = curl_getdate(std::string(value).c_str(), nullptr);
  if (when == -1) return std::nullopt;
  time_t now = std::time(nullptr);
  return when <= now ? 0 : static_cast<uint32_t>(std::min<int64_t>(when - now, UINT32_MAX));
}

bool IsTlsError(CURLcode code) {
  switch (code) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
      return true;
    default:
      return false;
  }
}

// Sets easy options, remembering the first failure.
class Setter {
 public:
  explicit Setter(CURL* easy) : easy_(easy) {}
  template <typename T>
  void operator()(CURLoption option, T value) {
    static_assert(!std::is_same_v<T, int> && !std::is_same_v<T, bool>, "curl wants long, not int");
    if (code_ != CURLE_OK) return;
    code_ = curl_easy_setopt(easy_, option, value);
    if (code_ != CURLE_OK) failed_option_ = static_cast<int>(option);
  }
  std::string error() const {
    if (code_ == CURLE_OK) return "";
    return std::string("curl option ") + std::to_string(failed_option_) + ": " +
           curl_easy_strerror(code_);
  }

 private:
  CURL* easy_;
  CURLcode code_ = CURLE_OK;
  int failed_option_ = 0;
};

}  // namespace

CurlTransport::CurlTransport(loop::Loop& loop, ApiConfig config, Options options)
    : loop_(loop),
      config_(std::move(config)),
      options_(std::move(options)),
      tokens_(config_.token, config_.token_file,
              options_.clock != nullptr ? *options_.clock : SteadyClock::Instance(),
              options_.token),
      url_prefix_(config_.server) {
  static std::once_flag global_init;
  std::call_once(global_init, [] { CHECK_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK); });
  for (auto* timer : {&timer_, &deferred_timer_}) {
    CHECK_EQ(timer->Open(this, [&](uv_timer_t* h) { return uv_timer_init(loop_.get(), h); }), 0);
  }

  multi_ = curl_multi_init();
  CHECK(multi_ != nullptr) << "curl_multi_init failed";
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, static_cast<curl_socket_callback>(&OnSocket));
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION,
                    static_cast<curl_multi_timer_callback>(&OnCurlTimer));
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, long{CURLPIPE_MULTIPLEX});
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, long{options_.max_connections});

  // tls_server_name: the URL carries the name (curl uses it for SNI and certificate checks)
  // and CURLOPT_CONNECT_TO sends the connection to the real host.
  if (!config_.tls_server_name.empty()) {
    CURLU* url = curl_url();
    char* scheme = nullptr;
    char* host = nullptr;
    char* port = nullptr;
    char* path = nullptr;
    if (curl_url_set(url, CURLUPART_URL, config_.server.c_str(), 0) == CURLUE_OK &&
        curl_url_get(url, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(url, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
        curl_url_get(url, CURLUPART_PATH, &path, 0) == CURLUE_OK) {
      std::string_view path_view = path;
      while (!path_view.empty() && path_view.back() == '/') path_view.remove_suffix(1);
      url_prefix_ = std::string(scheme) + "://" + config_.tls_server_name + ":" + port +
                    std::string(path_view);
      connect_to_ = config_.tls_server_name + ":" + port + ":" + host + ":" + port;
      connect_to_list_ = curl_slist_append(nullptr, connect_to_.c_str());
    } else {
      LOG(WARNING) << "cannot parse API server URL " << config_.server
                   << "; ignoring tls_server_name";
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(url);
  }
}

CurlTransport::~CurlTransport() {
  CHECK(!in_curl_) << "CurlTransport destroyed from inside on_head or on_body";
  for (auto& [id, request] : requests_) {
    if (request->added) curl_multi_remove_handle(multi_, request->easy);
  }
  requests_.clear();
  curl_multi_cleanup(multi_);  // may still report sockets to OnSocket: polls_ is alive
  polls_.clear();
  curl_slist_free_all(connect_to_list_);
}

ApiTransport::RequestId CurlTransport::Get(const std::string& path_and_query, Callbacks callbacks,
                                           uint64_t timeout_ms) {
  auto owned = std::make_unique<Request>();
  Request& request = *owned;
  request.id = next_id_++;
  request.transport = this;
  request.callbacks = std::move(callbacks);
  request.timeout_ms = timeout_ms;
  requests_.emplace(request.id, std::move(owned));
  requests_started_.fetch_add(1, std::memory_order_relaxed);

  if (std::string error = Configure(request, path_and_query); !error.empty()) {
    FailLater(request, std::move(error));
  } else if (in_curl_) {
    deferred_adds_.push_back(request.id);  // curl forbids adding from its callbacks
  } else {
    Add(request);
  }
  return request.id;
}

void CurlTransport::Cancel(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->cancelled) return;
  requests_cancelled_.fetch_add(1, std::memory_order_relaxed);
  if (in_curl_) {
    // Inside a curl callback (perhaps this request's own): removal waits until curl returns,
    // and the request's callbacks are not destroyed while one may be running.
    it->second->cancelled = true;
    deferred_removes_.push_back(id);
    return;
  }
  if (it->second->added) curl_multi_remove_handle(multi_, it->second->easy);
  requests_.erase(it);
}

CurlTransport::Stats CurlTransport::stats() const {
  Stats stats;
  stats.requests_started = requests_started_.load(std::memory_order_relaxed);
  stats.requests_failed = requests_failed_.load(std::memory_order_relaxed);
  stats.requests_cancelled = requests_cancelled_.load(std::memory_order_relaxed);
  stats.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  stats.token_read_failures = token_read_failures_.load(std::memory_order_relaxed);
  return stats;
}

std::string CurlTransport::Configure(Request& request, const std::string& path_and_query) {
  request.easy = curl_easy_init();
  if (request.easy == nullptr) return "curl_easy_init failed";
  CURL* easy = request.easy;

  const std::string& token = tokens_.Token();
  token_read_failures_.store(tokens_.read_failures(), std::memory_order_relaxed);
  request.headers = curl_slist_append(request.headers, "Accept: application/json");
  if (!token.empty()) {
    request.headers =
        curl_slist_append(request.headers, ("Authorization: Bearer " + token).c_str());
  }
  if (request.headers == nullptr) return "curl_slist_append failed";

  Setter set(easy);
  set(CURLOPT_URL, (url_prefix_ + path_and_query).c_str());  // curl copies strings
  set(CURLOPT_PRIVATE, reinterpret_cast<void*>(static_cast<uintptr_t>(request.id)));
  set(CURLOPT_ERRORBUFFER, static_cast<char*>(request.error));
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_HTTPHEADER, request.headers);
  set(CURLOPT_USERAGENT, options_.user_agent.c_str());
  set(CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode (gzip at least)
  set(CURLOPT_HEADERFUNCTION, static_cast<curl_write_callback>(&OnHeader));
  set(CURLOPT_HEADERDATA, static_cast<void*>(&request));
  set(CURLOPT_WRITEFUNCTION, static_cast<curl_write_callback>(&OnWrite));
  set(CURLOPT_WRITEDATA, static_cast<void*>(&request));
  set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
  if (request.timeout_ms > 0) set(CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms));
  if (options_.low_speed_limit_bytes_per_s > 0 && options_.low_speed_time_s > 0) {
    set(CURLOPT_LOW_SPEED_LIMIT, long{options_.low_speed_limit_bytes_per_s});
    set(CURLOPT_LOW_SPEED_TIME, long{options_.low_speed_time_s});
  }
  if (options_.tcp_keepalive_idle_s > 0) {
    set(CURLOPT_TCP_KEEPALIVE, 1L);
    set(CURLOPT_TCP_KEEPIDLE, long{options_.tcp_keepalive_idle_s});
    set(CURLOPT_TCP_KEEPINTVL, long{std::min<uint32_t>(options_.tcp_keepalive_idle_s, 10)});
  }
  if (!options_.use_environment_proxy) set(CURLOPT_PROXY, "");  // "" disables every proxy
  if (options_.http2) {
    set(CURLOPT_HTTP_VERSION, long{CURL_HTTP_VERSION_2TLS});
    set(CURLOPT_PIPEWAIT, 1L);  // wait for a connection that may multiplex, not open another
  } else {
    set(CURLOPT_HTTP_VERSION, long{CURL_HTTP_VERSION_1_1});
  }
  if (connect_to_list_ != nullptr) set(CURLOPT_CONNECT_TO, connect_to_list_);

  // TLS.
  set(CURLOPT_SSL_VERIFYPEER, config_.insecure_skip_tls_verify ? 0L : 1L);
  set(CURLOPT_SSL_VERIFYHOST, config_.insecure_skip_tls_verify ? 0L : 2L);
  if (!config_.ca_file.empty() || !config_.ca_pem.empty()) {
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));  // only the configured CA
  }
  if (!config_.ca_file.empty()) set(CURLOPT_CAINFO, config_.ca_file.c_str());
  auto blob = [](const std::string& pem) {
    // CURL_BLOB_COPY: curl keeps its own copy, so `data` need not outlive the call.
    return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  };
  if (!config_.ca_pem.empty()) {
    curl_blob ca = blob(config_.ca_pem);
    set(CURLOPT_CAINFO_BLOB, &ca);
  }
  if (!config_.client_cert_file.empty()) set(CURLOPT_SSLCERT, config_.client_cert_file.c_str());
  if (!config_.client_cert_pem.empty()) {
    curl_blob cert = blob(config_.client_cert_pem);
    set(CURLOPT_SSLCERT_BLOB, &cert);
    set(CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!config_.client_key_file.empty()) set(CURLOPT_SSLKEY, config_.client_key_file.c_str());
  if (!config_.client_key_pem.empty()) {
    curl_blob key = blob(config_.client_key_pem);
    set(CURLOPT_SSLKEY_BLOB, &key);
    set(CURLOPT_SSLKEYTYPE, "PEM");
  }
  return set.error();
}

void CurlTransport::Add(Request& request) {
  CURLMcode code = curl_multi_add_handle(multi_, request.easy);
  if (code != CURLM_OK) {
    FailLater(request, std::string("curl_multi_add_handle: ") + curl_multi_strerror(code));
    return;
  }
  request.added = true;  // curl calls OnCurlTimer(0): the transfer starts from the loop
}

void CurlTransport::FailLater(Request& request, std::string error) {
  request.failure = std::move(error);
  deferred_failures_.push_back(request.id);
  uv_timer_start(deferred_timer_.get(), &OnDeferredTimer, 0, 0);
}

bool CurlTransport::Drive(curl_socket_t fd, int flags) {
  int running = 0;
  in_curl_ = true;
  CURLMcode code = curl_multi_socket_action(multi_, fd, flags, &running);
  in_curl_ = false;
  if (code != CURLM_OK) {
    LOG_EVERY_N(ERROR, 100) << "curl_multi_socket_action: " << curl_multi_strerror(code);
  }
  ApplyDeferred();
  return DeliverDone();
}

void CurlTransport::ApplyDeferred() {
  std::vector<RequestId> removes;
  removes.swap(deferred_removes_);
  for (RequestId id : removes) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    if (it->second->added) curl_multi_remove_handle(multi_, it->second->easy);
    requests_.erase(it);
  }
  std::vector<RequestId> adds;
  adds.swap(deferred_adds_);
  for (RequestId id : adds) {
    auto it = requests_.find(id);
    if (it != requests_.end()) Add(*it->second);
  }
}

bool CurlTransport::DeliverDone() {
  CURLMsg* message;
  int left = 0;
  while ((message = curl_multi_info_read(multi_, &left)) != nullptr) {
    if (message->msg != CURLMSG_DONE) continue;
    CURL* easy = message->easy_handle;
    CURLcode code = message->data.result;  // the message dies with curl_multi_remove_handle
    char* private_data = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &private_data);
    auto it = requests_.find(static_cast<RequestId>(reinterpret_cast<uintptr_t>(private_data)));
    if (it == requests_.end() || it->second->easy != easy) {
      curl_multi_remove_handle(multi_, easy);  // not ours any more; cannot happen
      continue;
    }
    RequestPtr request = std::move(it->second);
    requests_.erase(it);
    curl_multi_remove_handle(multi_, easy);
    request->added = false;
    if (request->cancelled) continue;
    ApiResult result;
    if (code != CURLE_OK) result.transport_error = DescribeError(code, *request);
    result.status = request->head_delivered ? request->head.status : 0;
    if (!Finish(std::move(request), result)) return false;
  }
  return true;
}

bool CurlTransport::Finish(RequestPtr request, const ApiResult& result) {
  if (!result.ok()) requests_failed_.fetch_add(1, std::memory_order_relaxed);
  if (!request->callbacks.on_done) return true;
  DeathWatch::Scope scope(death_watch_);
  CallUser("CurlTransport on_done", [&] { request->callbacks.on_done(result); });
  return !scope.dead();  // `request` is freed on return either way
}

void CurlTransport::DeliverHead(Request& request) {
  request.head_delivered = true;
  // A rejected token: the next request re-reads the token file (it may have rotated).
  if (request.head.status == 401) tokens_.InvalidateToken();
  if (request.callbacks.on_head) {
    CallUser("CurlTransport on_head", [&] { request.callbacks.on_head(request.head); });
  }
}

std::string CurlTransport::DescribeError(CURLcode code, const Request& request) const {
  std::string detail = request.error[0] != '\0' ? request.error : curl_easy_strerror(code);
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
  // curl 7.88 says "Couldn't connect to server" without the reason; add the system's.
  long os_errno = 0;  // curl's type
  if (curl_easy_getinfo(request.easy, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK && os_errno != 0) {
    std::string reason = std::generic_category().message(static_cast<int>(os_errno));
    if (detail.find(reason) == std::string::npos) detail += " (" + reason + ")";
  }
  if (IsTlsError(code)) return "TLS: " + detail;
  // After the head, a failed read means the server went away mid-body.
  if (request.head_delivered && (code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR)) {
    return "connection closed mid-body: " + detail;
  }
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      if (request.timeout_ms > 0 && detail.find("Connection timed out") == std::string::npos) {
        return "timed out after " + std::to_string(request.timeout_ms) + " ms: " + detail;
      }
      return "timed out: " + detail;
    case CURLE_COULDNT_CONNECT:
      return "connect: " + detail;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return "resolve: " + detail;
    case CURLE_GOT_NOTHING:
      return "connection closed before a response: " + detail;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
      return "receive: " + detail;
    case CURLE_SEND_ERROR:
      return "send: " + detail;
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return "HTTP/2: " + detail;
    default:
      return detail;
  }
}

int CurlTransport::OnSocket(CURL* /*easy*/, curl_socket_t fd, int what, void* userp,
                            void* /*socketp*/) noexcept {
  auto* self = static_cast<CurlTransport*>(userp);
  if (what == CURL_POLL_REMOVE) {
    self->ClosePoll(fd);
    return 0;
  }
  std::unique_ptr<loop::FdWatch>& watch = self->polls_[fd];
  if (watch == nullptr) {
    std::string error;
    watch = loop::FdWatch::Open(
        self->loop_, fd,
        [self, fd](int ready, int status) {
          int flags = 0;
          if (status < 0) {
            flags = CURL_CSELECT_ERR;
          } else {
            if ((ready & loop::FdWatch::kReadable) != 0) flags |= CURL_CSELECT_IN;
            if ((ready & loop::FdWatch::kWritable) != 0) flags |= CURL_CSELECT_OUT;
          }
          self->Drive(fd, flags);  // the watch may be gone now
        },
        &error);
    if (watch == nullptr) {
      LOG_EVERY_N(ERROR, 100) << "curl socket: " << error;
      self->polls_.erase(fd);
      return -1;
    }
  }
  int events = 0;
  if ((what & CURL_POLL_IN) != 0) events |= loop::FdWatch::kReadable;
  if ((what & CURL_POLL_OUT) != 0) events |= loop::FdWatch::kWritable;
  (void)watch->SetInterest(events);
  return 0;
}

void CurlTransport::ClosePoll(curl_socket_t fd) {
  auto it = polls_.find(fd);
  if (it == polls_.end()) return;
  polls_.erase(it);  // stops polling now, while curl still has the fd open
}

int CurlTransport::OnCurlTimer(CURLM* /*multi*/, long timeout_ms, void* userp) noexcept {
  auto* self = static_cast<CurlTransport*>(userp);
  if (timeout_ms < 0) {
    uv_timer_stop(self->timer_.get());
  } else {
    // Never call curl from here: the callback runs inside curl.
    uv_timer_start(self->timer_.get(), &OnTimer, static_cast<uint64_t>(timeout_ms), 0);
  }
  return 0;
}

void CurlTransport::OnTimer(uv_timer_t* handle) noexcept {
  auto* self = static_cast<CurlTransport*>(handle->data);
  if (self == nullptr) return;
  self->Drive(CURL_SOCKET_TIMEOUT, 0);
}

void CurlTransport::OnDeferredTimer(uv_timer_t* handle) noexcept {
  auto* self = static_cast<CurlTransport*>(handle->data);
  if (self == nullptr) return;
  std::vector<RequestId> failures;
  failures.swap(self->deferred_failures_);
  for (RequestId id : failures) {
    auto it = self->requests_.find(id);
    if (it == self->requests_.end()) continue;  // cancelled meanwhile
    RequestPtr request = std::move(it->second);
    self->requests_.erase(it);
    if (request->added) curl_multi_remove_handle(self->multi_, request->easy);
    ApiResult result;
    result.transport_error = request->failure;
    if (!self->Finish(std::move(request), result)) return;
  }
}

size_t CurlTransport::OnHeader(char* data, size_t size, size_t count, void* userp) noexcept {
  auto& request = *static_cast<Request*>(userp);
  size_t length = size * count;
  if (request.cancelled) return 0;            // aborts the transfer
  if (request.head_delivered) return length;  // trailers
  std::string_view line(data, length);
  ApiResponseHead& head = request.head;
  if (StartsWithNoCase(line, "HTTP/")) {
    // A status line; a new one (after 100 Continue) starts the head afresh.
    head = ApiResponseHead{};
    std::string_view rest = line.substr(5);
    size_t space = rest.find(' ');
    head.http_version = std::string(rest.substr(0, space));
    if (space != std::string_view::npos) {
      std::string_view code = TrimView(rest.substr(space + 1)).substr(0, 3);
      std::from_chars(code.data(), code.data() + code.size(), head.status);
    }
  } else if (TrimView(line).empty()) {
    long code = 0;  // curl's type
    if (curl_easy_getinfo(request.easy, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code != 0) {
      head.status = static_cast<int>(code);
    }
    if (head.status >= 100 && head.status < 200) return length;  // interim; the real one follows
    request.transport->DeliverHead(request);
  } else if (StartsWithNoCase(line, "content-type:")) {
    head.content_type = std::string(TrimView(line.substr(13)));
  } else if (StartsWithNoCase(line, "retry-after:")) {
    head.retry_after_s = ParseRetryAfter(TrimView(line.substr(12)));
  }
  return request.cancelled ? 0 : length;
}

size_t CurlTransport::OnWrite(char* data, size_t size, size_t count, void* userp) noexcept {
  auto& request = *static_cast<Request*>(userp);
  size_t length = size * count;
  if (request.cancelled) return 0;
  if (!request.head_delivered) {
    request.transport->DeliverHead(request);  // not expected: curl passes the blank line first
    if (request.cancelled) return 0;
  }
  request.transport->bytes_received_.fetch_add(length, std::memory_order_relaxed);
  if (request.callbacks.on_body) {
    CallUser("CurlTransport on_body",
             [&] { request.callbacks.on_body(std::string_view(data, length)); });
  }
  return request.cancelled ? 0 : length;
}

}  // namespace kdns::k8s

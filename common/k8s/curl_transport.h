// CurlTransport: the real ApiTransport, libcurl's multi interface driven by a kdns::loop::Loop
// through the multi_socket API. curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION,
// one loop::FdWatch per socket) and when to call it back (CURLMOPT_TIMERFUNCTION, one uv_timer_t);
// we report readiness with curl_multi_socket_action and collect finished transfers with
// curl_multi_info_read. One multi handle keeps the connection cache, so connections are
// reused (keep-alive), and over TLS requests are multiplexed on one HTTP/2 connection when the
// server offers h2 (CURLOPT_PIPEWAIT).
//
// Requests: server + path, `Accept: application/json`, `Authorization: Bearer <token>` (from a
// TokenProvider, re-read after every 401), gzip accepted, TLS per ApiConfig. OnHead runs once
// the headers are complete (before any body byte), OnBody per de-chunked, decompressed piece,
// OnDone once at the end with a one-line transport error ("TLS: ...", "connect: ...",
// "timed out after 500 ms ...", "connection closed mid-body: ...") or none.
//
// Ownership: the transport owns the multi handle, every easy handle, the fd watches and the
// timers (libuv handles, each with its UvHandle owner); curl state is freed in the destructor,
// which cancels all requests (no callbacks run).
//
// Re-entrancy: callbacks never run from inside Get() or Cancel(). Any callback may call Get()
// and Cancel() (for any request, its own included); from inside on_head/on_body, curl forbids
// adding or removing handles, so those take effect right after curl returns, and a cancelled
// request gets no further callback. on_done may destroy the transport; on_head and on_body
// must not (CHECKed).
//
// Thread: the loop's thread only, except stats(), which may be read from any thread.
#pragma once

#include <curl/curl.h>
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/base/clock.h"
#include "common/base/version.h"
#include "common/k8s/api_config.h"
#include "common/k8s/api_transport.h"
#include "common/loop/fd_watch.h"
#include "common/loop/handle.h"
#include "common/loop/loop.h"

namespace kdns::k8s {

class CurlTransport final : public ApiTransport {
 public:
  struct Options {
    uint64_t connect_timeout_ms = 10'000;
    // Abort a transfer slower than low_speed_limit_bytes_per_s for low_speed_time_s (both
    // non-zero to enable). Off by default: an idle watch legitimately sends nothing for
    // minutes; TCP keep-alive detects a dead peer instead.
    uint32_t low_speed_limit_bytes_per_s = 0;
    uint32_t low_speed_time_s = 0;
    uint32_t tcp_keepalive_idle_s = 30;  // 0: no TCP keep-alive
    std::string user_agent = std::string("kdns/") + kVersion;
    bool http2 = true;             // over TLS, when the server offers it (ALPN)
    uint32_t max_connections = 0;  // per host; 0: no limit
    // Honour http_proxy/https_proxy/no_proxy from the environment, as client-go does.
    bool use_environment_proxy = true;
    TokenProvider::Options token;
    const Clock* clock = nullptr;  // for the token refresh; nullptr: SteadyClock
  };

  struct Stats {
    uint64_t requests_started = 0;
    uint64_t requests_failed = 0;  // ended with a transport error (not counting HTTP statuses)
    uint64_t requests_cancelled = 0;
    uint64_t bytes_received = 0;  // body bytes delivered to on_body
    uint64_t token_read_failures = 0;
  };

  CurlTransport(loop::Loop& loop, ApiConfig config, Options options);
  CurlTransport(loop::Loop& loop, ApiConfig config)
      : CurlTransport(loop, std::move(config), Options{}) {}
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  RequestId Get(const std::string& path_and_query, Callbacks callbacks,
                uint64_t timeout_ms) override;
  void Cancel(RequestId id) override;

  Stats stats() const;
  // Requests started and not yet done or cancelled.
  size_t active_requests() const { return requests_.size(); }
  const ApiConfig& config() const { return config_; }

 private:
  struct Request;
  using RequestPtr = std::unique_ptr<Request>;

  static int OnSocket(CURL* easy, curl_socket_t fd, int what, void* userp, void* socketp) noexcept;
  static int OnCurlTimer(CURLM* multi, long timeout_ms, void* userp) noexcept;
  static void OnTimer(uv_timer_t* handle) noexcept;
  static void OnDeferredTimer(uv_timer_t* handle) noexcept;
  static size_t OnHeader(char* data, size_t size, size_t count, void* userp) noexcept;
  static size_t OnWrite(char* data, size_t size, size_t count, void* userp) noexcept;

  // Sets up the easy handle; returns "" or what went wrong.
  std::string Configure(Request& request, const std::string& path_and_query);
  // Runs curl for `fd` (or its timers), then applies what callbacks deferred and delivers
  // finished transfers. False if an on_done destroyed the transport.
  bool Drive(curl_socket_t fd, int flags);
  void Add(Request& request);
  void ApplyDeferred();
  // Hands finished transfers to on_done. False if an on_done destroyed the transport.
  bool DeliverDone();
  // Calls on_done for a request already taken out of requests_. False if it destroyed us.
  bool Finish(RequestPtr request, const ApiResult& result);
  // Delivers the head once the headers are in.
  void DeliverHead(Request& request);
  void FailLater(Request& request, std::string error);
  std::string DescribeError(CURLcode code, const Request& request) const;
  void ClosePoll(curl_socket_t fd);

  loop::Loop& loop_;
  const ApiConfig config_;
  const Options options_;
  TokenProvider tokens_;
  // Parsed once from config_.server for tls_server_name ("host:port:real-host:real-port").
  std::string connect_to_;
  std::string url_prefix_;
  curl_slist* connect_to_list_ = nullptr;

  CURLM* multi_ = nullptr;
  // Raw timers rather than loop::Timer: curl re-arms its timer from inside the timer's own
  // callback, and the callback is the same static function every time.
  loop::UvHandle<uv_timer_t> timer_;           // curl's timeout
  loop::UvHandle<uv_timer_t> deferred_timer_;  // zero-delay: failures found inside Get()
  std::unordered_map<curl_socket_t, std::unique_ptr<loop::FdWatch>> polls_;
  std::unordered_map<RequestId, RequestPtr> requests_;
  RequestId next_id_ = 1;
  // Inside curl_multi_socket_action: adding and removing handles must wait.
  bool in_curl_ = false;
  std::vector<RequestId> deferred_adds_;
  std::vector<RequestId> deferred_removes_;
  std::vector<RequestId> deferred_failures_;

  std::atomic<uint64_t> requests_started_{0};
  std::atomic<uint64_t> requests_failed_{0};
  std::atomic<uint64_t> requests_cancelled_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> token_read_failures_{0};
  loop::internal::DeathWatch death_watch_;
};

}  // namespace kdns::k8s

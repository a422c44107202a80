// ApiTransport: streaming GETs to the Kubernetes API server, as the list/watch logic
// (Reflector) needs them. The real implementation is libcurl's multi interface driven by a
// libuv loop (CurlTransport, with TLS, bearer tokens and HTTP/2); tests use a scripted one.
//
// A request delivers, in order: OnHead once the status line and headers are in, OnBody for
// each piece of the (de-chunked, decompressed) body as it arrives, and OnDone exactly once
// at the end, whether the server finished, the connection failed, or the request timed
// out. Cancel() ends a request without OnDone. Watch responses stream for minutes, so the
// body is never buffered here.
//
// Thread: the loop thread only. Callbacks run on it, never from inside Get() or Cancel().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace kdns::k8s {

struct ApiResponseHead {
  int status = 0;            // HTTP status: 200, 410, 429, 500, ...
  std::string http_version;  // "1.1", "2"
  std::string content_type;
  std::optional<uint32_t> retry_after_s;  // Retry-After in seconds (429, 503)
};

struct ApiResult {
  // Empty when the exchange completed (whatever its HTTP status); otherwise one line
  // saying what failed: "connection refused", "TLS: certificate verify failed", "timed
  // out after 30000 ms", "connection closed mid-body", ...
  std::string transport_error;
  int status = 0;  // as in OnHead; 0 when no head arrived
  bool ok() const { return transport_error.empty(); }
};

class ApiTransport {
 public:
  using RequestId = uint64_t;

  struct Callbacks {
    std::function<void(const ApiResponseHead& head)> on_head;
    std::function<void(std::string_view body)> on_body;
    std::function<void(const ApiResult& result)> on_done;
  };

  virtual ~ApiTransport() = default;

  // GET `path_and_query` ("/api/v1/services?limit=500") on the configured server, with
  // `Accept: application/json` and the current credentials. `timeout_ms` bounds the whole
  // request (0: none, for watches, whose end the server decides with timeoutSeconds).
  virtual RequestId Get(const std::string& path_and_query, Callbacks callbacks,
                        uint64_t timeout_ms) = 0;
  // Ends a request; no callback of it runs afterwards. Unknown or finished ids are ignored.
  virtual void Cancel(RequestId id) = 0;
};

}  // namespace kdns::k8s

// Reflector: keeps one Kubernetes resource (a list path such as /api/v1/services or
// /apis/discovery.k8s.io/v1/endpointslices) in step with the API server, the way client-go's
// reflector does, and hands what it learns to a ReflectorHandler.
//
// Life cycle (shared/k8s-api/README.md has the captures behind every rule):
//   LIST   GET <path>?resourceVersion=<rv>[&resourceVersionMatch=NotOlderThan][&limit=<n>],
//          then, while a page has metadata.continue, GET <path>?limit=<n>&continue=<token,
//          URL-encoded> (never with a resourceVersion). Which rv, as client-go chooses it:
//            first LIST                         rv=0, limit: served from the API server's watch
//                                               cache, not a quorum read of etcd (the cache
//                                               ignores limit: the whole resource in one body)
//            re-LIST (410, stall, malformed)    rv=<last RV seen>, NotOlderThan, no limit (so
//                                               the watch cache serves it; with limit a 1.25
//                                               server reads etcd), limit kept if an earlier
//                                               LIST came back paginated (no watch cache)
//            after a LIST answered 410 or 504   rv unset, limit: a consistent read from etcd,
//            "Too large resource version"       paginated (the cache cannot serve that rv)
//          The body is decoded as a stream (ListStreamDecoder): each object goes to the handler
//          as soon as it is decoded, between OnListBegin() (at page 1's 200) and OnListEnd()
//          (after the last page), so neither the body nor the list is ever held whole. The
//          watch starts from the LIST's metadata.resourceVersion (every page reports the first
//          page's), never from the largest item RV. A 410 on a continue token restarts the
//          LIST from page 1 (OnListBegin again); the "inconsistent" token the 410 Status offers
//          is not used, since mixing snapshots would break the list-then-watch contract. A
//          later page that fails is asked again with the same token, and the objects of it
//          already delivered are skipped (a token pins one snapshot, in key order).
//          With watch_list (off by default, as client-go's WatchListClient), the LIST is a
//          streaming watch-list instead: GET <path>?watch=1&sendInitialEvents=true&
//          resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true[&resourceVersion=<rv>]:
//          its ADDED events are the list's objects (OnListBegin at the 200, OnListObject each),
//          the BOOKMARK annotated k8s.io/initial-events-end ends the list (OnListEnd with its
//          RV), and the same response goes on as the watch. A server that refuses it (a 4xx
//          other than 410 and 429: 1.25 answers 422 "resourceVersionMatch is forbidden for
//          watch"), or ends it before the end bookmark, is asked with LISTs from then on.
//   WATCH  GET <path>?watch=1&allowWatchBookmarks=true&resourceVersion=<rv>&timeoutSeconds=<t>
//          with t drawn in [watch_timeout_min_s, watch_timeout_max_s]. The body is split into
//          lines (a line may span many pieces, a piece may hold many lines; a line longer than
//          max_line_bytes is an error), each decoded with DecodeWatchEvent. ADDED, MODIFIED and
//          DELETED go to OnEvent(); the RV of every event and bookmark is remembered.
//
// How a watch ends, and what follows:
//   clean close (timeoutSeconds)          re-WATCH from the last RV at once (after backoff if
//                                          the watch lasted under min_watch_ms with no line, so
//                                          a server that closes at once is not hammered)
//   transport error, cut mid-line         re-WATCH from the last RV after backoff; the partial
//                                          line is dropped
//   HTTP 410, or an ERROR event code 410  re-LIST (the new list replaces the state at its
//                                          end) after a random delay in [0, relist_jitter_ms]
//                                          the first time (an API-server restart sends 410 to
//                                          every replica at once: they must not all re-LIST in
//                                          the same second), after backoff if it repeats
//   other HTTP status or ERROR event      backoff, then re-WATCH (the transport re-reads the
//                                          token, so 401/403 heal when it rotates)
//   Retry-After on any error response     wait that long (at most max_retry_after_ms) instead
//   (429, 503, 504)                        of the backoff delay
//   a line that is not a watch event      count, log (rate-limited), re-LIST after backoff: we
//                                          cannot know what we missed
//   no byte for stall_timeout_ms          cancel and re-WATCH from the last RV at once; when two
//                                          watches in a row stall without a single line, re-LIST
//                                          (a watch from an RV the server has not reached, e.g.
//                                          after an etcd restore, hangs silently), jittered
// LIST failures retry the same page after backoff (a 410 restarts from page 1, jittered). A
// page that does not decode (not JSON, cut mid-item, a value over max_list_item_bytes)
// restarts the LIST after backoff. A LIST response silent for list_timeout_ms is cut and the
// page asked again after backoff. The first LIST is never delayed.
//
// An event whose object failed to decode (DecodeWatchEvent's object_error) is delivered as a
// DELETED of that namespace/name, counted as a "decode" error and logged. A re-LIST would
// reach the same state (a LIST skips an item that does not decode), so deleting avoids a
// LIST storm while an object stays undecodable, and never serves its stale copy.
//
// Every request goes through the ApiTransport given, which may be a RateLimitedTransport
// shared by all reflectors of a process (client-side QPS/burst).
//
// Backoff: exponential with full jitter (see backoff.h), reset after a stable period.
//
// The code: reflector.cc (life cycle, errors, retries), reflector_list.cc (LIST),
// reflector_watch.cc (WATCH).
//
// Thread: everything, including every handler call, happens on the thread of the loop that
// drives the transport and the timers. The handler may call Stop() from inside a callback but
// must not destroy the Reflector there.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/clock.h"
#include "common/k8s/api_transport.h"
#include "common/k8s/backoff.h"
#include "common/k8s/decode.h"
#include "common/k8s/objects.h"
#include "common/k8s/reflector_timers.h"

namespace kdns::k8s {

// Why a watch was restarted (or the resource re-listed). Metric label values in ToString().
enum class RestartReason : uint8_t {
  kClosed,      // "closed": the server ended the watch cleanly (timeoutSeconds)
  kTransport,   // "transport": connection failed or was cut
  kExpired,     // "expired": HTTP 410 or an ERROR event with code 410; re-LIST
  kHttpError,   // "http_error": a status other than 200 and 410 when the watch was opened
  kErrorEvent,  // "error_event": an ERROR event other than 410
  kStall,       // "stall": no byte for stall_timeout_ms
  kMalformed,   // "malformed": a line that is not a watch event, or too long; re-LIST
};
inline constexpr size_t kRestartReasonCount = 7;
std::string_view ToString(RestartReason reason);

enum class ReflectorPhase : uint8_t { kList, kWatch };

// One failed request or bad input, for metrics and logs.
struct ReflectorError {
  ReflectorPhase phase = ReflectorPhase::kList;
  // Metric label: the HTTP status ("500", "404"; also the code of an ERROR event),
  // "transport", or "decode" (a body, line or object that did not decode).
  std::string code;
  int http_status = 0;  // 0 unless code is an HTTP status
  std::string message;  // one line with context
};

// Called on the loop thread. OnList and OnEvent are the data; the rest is observability.
class ReflectorHandler {
 public:
  virtual ~ReflectorHandler() = default;

  // A LIST, streamed: OnListBegin(), OnListObject() for each object as it is decoded, then
  // OnListEnd() with the list's meta (its resource_version is the list RV). Objects delivered
  // before OnListBegin and not again before OnListEnd are gone. A LIST restarted from its
  // first page calls OnListBegin again. The defaults collect the objects and call OnList
  // with the whole list at the end, for handlers of small resources that want it so.
  virtual void OnListBegin() { collected_ = ObjectList{}; }
  virtual void OnListObject(Object&& object);
  virtual void OnListEnd(const ListMeta& meta);
  // The complete state of the resource, whole (only through the default OnList* above).
  virtual void OnList(ObjectList list) {}
  // ADDED, MODIFIED or DELETED (never BOOKMARK or ERROR). The object is decoded, except for a
  // DELETED with object_error set (see above), which carries only its metadata.
  // `received` is when the line's last byte arrived.
  virtual void OnEvent(const WatchEvent& event, std::chrono::steady_clock::time_point received) = 0;

  virtual void OnBookmark(const ResourceVersion& resource_version) {}
  virtual void OnError(const ReflectorError& error) {}
  // A watch restart; kExpired and kMalformed restarts are re-LISTs.
  virtual void OnRestart(RestartReason reason) {}
  // The first success (a complete LIST, or a watch that got its 200) after a failure or at
  // start.
  virtual void OnHealthy() {}

 private:
  ObjectList collected_;  // by the default OnList* calls
};

struct ReflectorOptions {
  std::string path;  // "/api/v1/services": no query, no trailing slash
  Kind kind = Kind::kService;
  // Where else the same resource may be served (another group or version of one CRD, e.g.
  // "/apis/mesh.avesha.io/v1beta1/serviceimports"): while a LIST answers 404, each retry
  // tries the next of path, other_paths[0], ... in turn. The watch uses the path that listed.
  std::vector<std::string> other_paths;
  // Sent as labelSelector= with every LIST and WATCH when not empty (for example
  // "multicluster.kubernetes.io/service-name": slices that have the label).
  std::string label_selector;
  uint32_t page_size = 500;
  // A LIST response that sends no byte for this long is cut and asked again. Not a bound on
  // its whole time: a watch-cache LIST of a large resource is one long body.
  uint64_t list_timeout_ms = 60'000;
  uint32_t watch_timeout_min_s = 300;
  uint32_t watch_timeout_max_s = 600;
  // The real server sends a bookmark about once a minute on an idle watch.
  uint64_t stall_timeout_ms = 90'000;
  uint64_t min_watch_ms = 1'000;
  uint64_t max_line_bytes = 16ull << 20;
  // One item of a LIST (or another member of its top level), as text.
  uint64_t max_list_item_bytes = 16ull << 20;
  // List with a streaming watch-list where the server supports it (see above).
  bool watch_list = false;
  // The bound of the random delay before a re-LIST after 410 (or a stall); 0: none.
  uint64_t relist_jitter_ms = 5'000;
  uint64_t max_retry_after_ms = 60'000;
  uint64_t error_log_interval_ms = 30'000;
  // A 404 (a CRD that is not installed) goes to the handler without a log line of its own,
  // since it repeats at every retry until the CRD comes: the handler logs it once.
  bool quiet_not_found = false;
  Backoff::Options backoff;
  Backoff::Random random;  // empty: seeded PRNG; also jitters timeoutSeconds
};

class Reflector {
 public:
  enum class State : uint8_t { kIdle, kListing, kWatching, kWaiting, kStopped };

  struct Stats {
    bool synced = false;                   // a complete list has been delivered
    std::optional<uint64_t> last_sync_ms;  // clock time of the last complete list
    // clock time of the last complete list, event or bookmark: how stale we may be
    std::optional<uint64_t> last_progress_ms;
    ResourceVersion resource_version;  // where the next watch starts
    uint64_t lists = 0;                // complete lists delivered
    uint64_t cache_lists = 0;          // LISTs begun with a resourceVersion (watch cache)
    uint64_t list_pages = 0;
    uint64_t relists = 0;  // 410 (HTTP or ERROR event)
    std::array<uint64_t, kRestartReasonCount> restarts{};
    uint64_t added = 0;
    uint64_t modified = 0;
    uint64_t deleted = 0;
    uint64_t bookmarks = 0;
    std::map<std::string, uint64_t> errors;  // by ReflectorError::code
    uint64_t malformed_lines = 0;
    uint64_t watches = 0;  // watch requests sent

    uint64_t restarts_for(RestartReason reason) const {
      return restarts[static_cast<size_t>(reason)];
    }
  };

  // `transport`, `timers`, `clock` and `handler` must outlive the reflector.
  Reflector(ApiTransport& transport, TimerFactory& timers, const Clock& clock,
            ReflectorHandler& handler, ReflectorOptions options);
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  // Sends the first LIST. Call once.
  void Start();
  // Cancels the request and the timers; no handler call afterwards. Idempotent.
  void Stop();

  State state() const { return state_; }
  // The path being listed and watched (options().path or one of other_paths).
  const std::string& path() const;
  const Stats& stats() const { return stats_; }
  const ReflectorOptions& options() const { return options_; }
  // The delay of the pending retry (while kWaiting), for tests and logs.
  uint64_t retry_delay_ms() const { return retry_delay_ms_; }

 private:
  enum class Next : uint8_t { kList, kListPage, kWatch };

  void BeginList();
  void SendListPage();
  void OnListHead(const ApiResponseHead& head);
  void OnListBody(std::string_view piece);
  bool OnListObject(Object&& object, uint64_t attempt);
  void OnListDone(const ApiResult& result);
  void OnListStall();
  // Ends a LIST: stats, OnListEnd, then the watch unless the list was a watch-list's
  // initial events (its response goes on as the watch).
  void CompleteList(const ListMeta& meta, bool start_watch = true);
  void StartWatch(bool initial_events = false);
  void OnWatchHead(const ApiResponseHead& head);
  void OnWatchBody(std::string_view piece);
  void OnWatchDone(const ApiResult& result);
  // Returns false when the watch was ended (by the line or by the handler).
  bool ProcessLine(std::string_view line);
  void OnStallTimer();

  // How long Retry() waits: not at all, the backoff delay, or the backoff delay except for
  // the first failure after a stable period, which waits a random time in
  // [0, relist_jitter_ms] instead (re-LISTs after 410 or a stall).
  enum class Delay : uint8_t { kNow, kBackoff, kJittered };

  void CancelRequest();
  // Ends the current attempt: counts the restart (if any), then runs `next` after the delay
  // (Retry-After, bounded, when the server gave one).
  void Retry(Next next, Delay delay, std::optional<RestartReason> reason,
             std::optional<uint32_t> retry_after_s);
  void RunNext(Next next);
  // A complete LIST or a watch's 200: feeds the backoff, tells the handler after a failure.
  void Healthy();
  // Counts, logs (rate-limited) and reports one failure; marks us unhealthy.
  void Error(const ReflectorError& error);
  std::string Describe() const;  // "k8s services", the prefix of log lines

  // Error bodies (Status objects) are small; a larger one is cut, only its message matters.
  static constexpr size_t kMaxErrorBodyBytes = 64 * 1024;
  // "HTTP 500 InternalError: ..." from a Status body, or the status alone when it is not one;
  // a Status's retryAfterSeconds goes to *retry_after_s (when not null) unless that is set.
  static std::string DescribeStatus(int status, const std::string& body,
                                    std::optional<uint32_t>* retry_after_s);

  ApiTransport& transport_;
  const Clock& clock_;
  ReflectorHandler& handler_;
  const ReflectorOptions options_;
  Backoff::Random random_;
  Backoff backoff_;
  std::unique_ptr<OneShotTimer> retry_timer_;
  std::unique_ptr<OneShotTimer> stall_timer_;

  State state_ = State::kIdle;
  std::optional<ApiTransport::RequestId> request_;
  // Incremented whenever the current request ends, so callbacks of an ended one (and code
  // after a handler call that stopped us) can tell.
  uint64_t attempt_ = 0;
  bool healthy_ = false;
  uint64_t retry_delay_ms_ = 0;
  size_t path_index_ = 0;  // 0: options_.path, i: other_paths[i - 1]

  // The response being received.
  ApiResponseHead head_;
  std::string body_;  // a LIST page, or the error body of a watch

  // LIST in progress.
  // The resourceVersion parameter of this LIST's first page: "0" (watch cache) at first, the
  // last RV seen after that, "" (etcd, consistent) after a 410 or too-large answer
  // (consistent_list_).
  std::string list_rv_;
  bool consistent_list_ = false;
  bool paginated_ = false;  // a LIST came back with a continue token: the server pages
  std::string continue_token_;
  std::unique_ptr<ListStreamDecoder> decoder_;  // of the page being received (status 200)
  uint64_t page_objects_ = 0;                   // objects of this page delivered
  uint64_t skip_objects_ = 0;  // of this page delivered by an earlier attempt at it
  uint64_t list_objects_ = 0;  // objects of this LIST delivered

  // WATCH in progress.
  bool initial_events_ = false;      // a watch-list before its end bookmark
  bool watch_list_refused_ = false;  // the server does not serve watch-lists: LIST instead
  std::string line_;                 // a partial line carried over between pieces
  uint64_t watch_started_ms_ = 0;
  uint64_t last_byte_ms_ = 0;
  uint64_t watch_lines_ = 0;
  uint32_t silent_stalls_ = 0;  // consecutive stalled watches that got no line at all

  uint64_t last_error_log_ms_ = 0;
  bool error_logged_ = false;
  uint64_t errors_not_logged_ = 0;
  Stats stats_;
};

// Percent-encodes everything but RFC 3986 unreserved characters, for a query value.
std::string UrlEncode(std::string_view text);

}  // namespace kdns::k8s

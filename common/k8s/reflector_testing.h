// Test doubles for the Reflector and the API source (header-only, tests only):
//   FakeApiTransport  a scripted ApiTransport: it records each Get() and the test answers it
//                     (head, body pieces, done) when it chooses, so no callback ever runs
//                     inside Get() or Cancel(), as the real transport promises.
//   FakeTimers        one-shot timers on a ManualClock: AdvanceMs() moves the clock and fires
//                     the timers that fall due, in order, so tests run on simulated time.
//   Harness           a services Reflector over both, with a Recorder of every handler call
//                     and the steps of the tests (LIST answered, watch opened)
//   StreamHarness     the same with a StreamRecorder of the streamed list calls
// Thread: the test's thread.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/base/clock.h"
#include "common/k8s/api_transport.h"
#include "common/k8s/decode.h"
#include "common/k8s/reflector.h"
#include "common/k8s/reflector_timers.h"
#include "common/k8s/testing.h"

namespace kdns::k8s::testing {

class FakeApiTransport final : public ApiTransport {
 public:
  struct Request {
    RequestId id = 0;
    std::string path;  // path and query
    uint64_t timeout_ms = 0;
    Callbacks callbacks;
    bool cancelled = false;
    bool done = false;
    bool active() const { return !cancelled && !done; }
    // The value of a query parameter ("" when absent; not decoded).
    std::string Param(std::string_view name) const {
      size_t query = path.find('?');
      if (query == std::string::npos) return "";
      std::string_view rest = std::string_view(path).substr(query + 1);
      while (!rest.empty()) {
        size_t amp = rest.find('&');
        std::string_view pair = rest.substr(0, amp);
        size_t eq = pair.find('=');
        if (pair.substr(0, eq) == name) {
          return eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1));
        }
        if (amp == std::string_view::npos) break;
        rest.remove_prefix(amp + 1);
      }
      return "";
    }
    std::string_view Path() const { return std::string_view(path).substr(0, path.find('?')); }
    bool IsWatch() const { return Param("watch") == "1"; }
  };

  RequestId Get(const std::string& path_and_query, Callbacks callbacks,
                uint64_t timeout_ms) override {
    auto request = std::make_unique<Request>();
    request->id = ++next_id_;
    request->path = path_and_query;
    request->timeout_ms = timeout_ms;
    request->callbacks = std::move(callbacks);
    requests_.push_back(std::move(request));
    return next_id_;
  }
  void Cancel(RequestId id) override {
    for (auto& request : requests_) {
      if (request->id == id && request->active()) request->cancelled = true;
    }
  }

  const std::deque<std::unique_ptr<Request>>& requests() const { return requests_; }
  size_t ActiveCount() const {
    return std::count_if(requests_.begin(), requests_.end(),
                         [](const auto& request) { return request->active(); });
  }
  // The one active request; fails the test when there is not exactly one.
  Request& Active() {
    Request* found = nullptr;
    for (auto& request : requests_) {
      if (!request->active()) continue;
      INFO("a second active request: " << request->path);
      REQUIRE(found == nullptr);
      found = request.get();
    }
    INFO("no active request");
    REQUIRE(found != nullptr);
    return *found;
  }
  // The active request whose path starts with `prefix`, or null.
  Request* ActiveFor(std::string_view prefix) {
    for (auto& request : requests_) {
      if (request->active() && std::string_view(request->path).substr(0, prefix.size()) == prefix) {
        return request.get();
      }
    }
    return nullptr;
  }

  // The pieces of one exchange. Each does nothing once the request is cancelled or done.
  static void Head(Request& request, int status, std::optional<uint32_t> retry_after_s = {}) {
    if (!request.active()) return;
    ApiResponseHead head;
    head.status = status;
    head.http_version = "1.1";
    head.content_type = "application/json";
    head.retry_after_s = retry_after_s;
    request.callbacks.on_head(head);
  }
  static void Body(Request& request, std::string_view piece) {
    if (request.active()) request.callbacks.on_body(piece);
  }
  static void Done(Request& request, std::string transport_error = "", int status = 0) {
    if (!request.active()) return;
    request.done = true;
    ApiResult result;
    result.transport_error = std::move(transport_error);
    result.status = status;
    // Copied: the callback may issue a new Get(), which does not move this request, but
    // keeps the callee's captures alive regardless.
    auto on_done = request.callbacks.on_done;
    on_done(result);
  }
  // A whole response: head, the body in one piece, done.
  static void Respond(Request& request, int status, std::string_view body,
                      std::optional<uint32_t> retry_after_s = {}) {
    Head(request, status, retry_after_s);
    if (!body.empty()) Body(request, body);
    Done(request, "", status);
  }

 private:
  RequestId next_id_ = 0;
  std::deque<std::unique_ptr<Request>> requests_;
};

class FakeTimers final : public TimerFactory {
 public:
  explicit FakeTimers(ManualClock& clock) : clock_(clock) {}
  ~FakeTimers() override {
    if (timers_.empty()) return;
    std::fprintf(stderr, "a timer outlived its FakeTimers\n");
    std::abort();
  }

  std::unique_ptr<OneShotTimer> NewTimer() override { return std::make_unique<Timer>(*this); }

  // Moves the clock forward by `ms`, firing every timer that falls due on the way, at its
  // due time and in due order (timers a callback starts fire too if they fall due).
  void AdvanceMs(uint64_t ms) {
    uint64_t target = clock_.NowMs() + ms;
    while (true) {
      Timer* next = nullptr;
      for (Timer* timer : timers_) {
        if (!timer->active_ || timer->due_ms_ > target) continue;
        if (next == nullptr || timer->due_ms_ < next->due_ms_ ||
            (timer->due_ms_ == next->due_ms_ && timer->sequence_ < next->sequence_)) {
          next = timer;
        }
      }
      if (next == nullptr) break;
      clock_.SetMs(std::max(clock_.NowMs(), next->due_ms_));
      next->active_ = false;
      auto callback = std::move(next->callback_);
      callback();
    }
    clock_.SetMs(target);
  }
  // Time until the earliest active timer, if any.
  std::optional<uint64_t> NextDueInMs() const {
    std::optional<uint64_t> due;
    for (const Timer* timer : timers_) {
      if (timer->active_ && (!due || timer->due_ms_ < *due)) due = timer->due_ms_;
    }
    if (!due) return std::nullopt;
    return *due - std::min(*due, clock_.NowMs());
  }
  size_t ActiveCount() const {
    return std::count_if(timers_.begin(), timers_.end(), [](const Timer* t) { return t->active_; });
  }

 private:
  class Timer final : public OneShotTimer {
   public:
    explicit Timer(FakeTimers& owner) : owner_(owner) { owner_.timers_.push_back(this); }
    ~Timer() override { std::erase(owner_.timers_, this); }
    void Start(uint64_t delay_ms, std::function<void()> callback) override {
      active_ = true;
      due_ms_ = owner_.clock_.NowMs() + delay_ms;
      sequence_ = ++owner_.sequence_;
      callback_ = std::move(callback);
    }
    void Stop() override {
      active_ = false;
      callback_ = nullptr;
    }
    bool IsActive() const override { return active_; }

   private:
    friend class FakeTimers;
    FakeTimers& owner_;
    bool active_ = false;
    uint64_t due_ms_ = 0;
    uint64_t sequence_ = 0;
    std::function<void()> callback_;
  };

  ManualClock& clock_;
  uint64_t sequence_ = 0;
  std::vector<Timer*> timers_;
};

// Records every handler call, in order, as one line each in `calls`.
class Recorder final : public ReflectorHandler {
 public:
  void OnList(ObjectList list) override {
    calls.push_back("LIST " + list.meta.resource_version.text);
    lists.push_back(std::move(list));
    if (stop_on_list) reflector->Stop();
  }
  void OnEvent(const WatchEvent& event, std::chrono::steady_clock::time_point) override {
    std::string line = std::string(ToString(event.type)) + " " + Key(event.meta);
    calls.push_back(line);
    events.push_back(line);
  }
  void OnBookmark(const ResourceVersion& rv) override { calls.push_back("BOOKMARK " + rv.text); }
  void OnError(const ReflectorError& error) override {
    calls.push_back("ERROR " + error.code);
    errors.push_back(error);
  }
  void OnRestart(RestartReason reason) override {
    calls.push_back("RESTART " + std::string(ToString(reason)));
  }
  void OnHealthy() override { calls.push_back("HEALTHY"); }

  std::vector<std::string> calls;
  std::vector<std::string> events;
  std::vector<ObjectList> lists;
  std::vector<ReflectorError> errors;
  bool stop_on_list = false;
  Reflector* reflector = nullptr;
};

// Records the streamed list calls, one line each: "BEGIN", "ns/name@rv", "END <rv>".
class StreamRecorder final : public ReflectorHandler {
 public:
  void OnListBegin() override { calls.push_back("BEGIN"); }
  void OnListObject(Object&& object) override {
    std::visit(
        [&](const auto& value) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(value)>, std::monostate>) {
            calls.push_back(Key(value.meta));
          }
        },
        object);
  }
  void OnListEnd(const ListMeta& meta) override {
    calls.push_back("END " + meta.resource_version.text);
  }
  void OnEvent(const WatchEvent&, std::chrono::steady_clock::time_point) override {}
  void OnError(const ReflectorError& error) override { errors.push_back(error.message); }

  std::vector<std::string> calls;
  std::vector<std::string> errors;
};

// A reflector over the fakes on simulated time, its handler a `Handler` that records its calls:
// what Harness and StreamHarness share. By default the services reflector, with the jitter
// pinned to the middle.
template <class Handler>
struct ReflectorHarness {
  explicit ReflectorHarness(ReflectorOptions options = Services()) {
    reflector = std::make_unique<Reflector>(transport, timers, clock, handler, std::move(options));
  }
  static ReflectorOptions Services() {
    ReflectorOptions options;
    options.path = "/api/v1/services";
    options.kind = Kind::kService;
    options.random = [] { return 0.5; };
    options.relist_jitter_ms = 0;  // re-LISTs at once; the jitter has its own test
    return options;
  }

  // Starts the reflector; returns its first request.
  FakeApiTransport::Request& Start() {
    reflector->Start();
    return transport.Active();
  }
  // Starts the reflector and answers the first page of the paginated LIST; returns the
  // request for the second.
  FakeApiTransport::Request& StartAtSecondPage() {
    FakeApiTransport::Respond(Start(), 200, ReadCapture("01-list-services-p1"));
    return transport.Active();
  }

  ManualClock clock{1'000'000};
  FakeTimers timers{clock};
  FakeApiTransport transport;
  Handler handler;
  std::unique_ptr<Reflector> reflector;  // after what it uses
};

// The reflector with a Recorder of every handler call, and the steps of its tests: the LIST
// answered, the watch that follows.
struct Harness : ReflectorHarness<Recorder> {
  explicit Harness(ReflectorOptions options = Services()) : ReflectorHarness(std::move(options)) {
    handler.reflector = reflector.get();
  }

  // Answers the four captured pages of the paginated LIST, checking the continue tokens.
  void ListServices() {
    std::string token;
    for (int page = 1; page <= 4; ++page) {
      FakeApiTransport::Request& request = transport.Active();
      INFO("page " << page << ": " << request.path);
      REQUIRE_FALSE(request.IsWatch());
      REQUIRE(request.Path() == "/api/v1/services");
      REQUIRE(request.Param("limit") == "500");
      REQUIRE(request.Param("continue") == token);
      std::string body = ReadCapture("01-list-services-p" + std::to_string(page));
      FakeApiTransport::Respond(request, 200, body);
      auto decoded = DecodeList(body);
      REQUIRE(decoded.ok());
      token = UrlEncode(decoded->meta.continue_token);
    }
  }
  // Starts the reflector and answers its LIST: where every watch test begins.
  void StartAndList() {
    reflector->Start();
    ListServices();
  }
  // The active request, which must be a watch.
  FakeApiTransport::Request& Watch() {
    FakeApiTransport::Request& request = transport.Active();
    REQUIRE(request.IsWatch());
    return request;
  }
  // The watch, its 200 head sent: what comes on the stream is the test's.
  FakeApiTransport::Request& OpenWatch() {
    FakeApiTransport::Request& watch = Watch();
    FakeApiTransport::Head(watch, 200);
    return watch;
  }
};

// The reflector with a StreamRecorder of the streamed list calls.
struct StreamHarness : ReflectorHarness<StreamRecorder> {
  using ReflectorHarness::ReflectorHarness;

  size_t Objects() const {
    return std::count_if(handler.calls.begin(), handler.calls.end(), [](const std::string& call) {
      return call != "BEGIN" && call.rfind("END ", 0) != 0;
    });
  }
};

}  // namespace kdns::k8s::testing

// Helpers of the Forwarder's tests (forwarder*_test.cc), next to the fake upstream of
// common/upstream/testing.h: options with short timeouts, requests by name (and client),
// budgets small enough to fill, and a resolve that runs the loop until its callback ran.
// The tests live in this namespace, so each file names its helpers without importing them,
// and each is a TEST_CASE_METHOD(LoopFixture, ...): its loop closes clean after the body.
// Header-only; tests only.
#pragma once

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/dns/testing.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/socket_address.h"
#include "common/upstream/forward_budgets.h"
#include "common/upstream/forwarder.h"

namespace kdns::upstream::testing {

using loop::testing::LoopFixture;
using loop::testing::RunUntil;

// Short tries, one per upstream, and a quick background probe.
inline Forwarder::Options TestOptions() {
  Forwarder::Options options;
  options.min_try_timeout_ms = 100;
  options.max_try_timeout_ms = 100;
  options.total_timeout_ms = 2000;
  options.max_tries_per_upstream = 1;
  options.probe_interval_ms = 50;
  return options;
}

// TestOptions where one failure marks an upstream failed (and down), and probes run every
// `probe_interval_ms`.
inline Forwarder::Options FailFastOptions(uint64_t probe_interval_ms) {
  Forwarder::Options options = TestOptions();
  options.failure_threshold = 1;
  options.probe_interval_ms = probe_interval_ms;
  return options;
}

inline Request Req(std::string_view name, dns::Transport transport = dns::Transport::kUdp) {
  Request request;
  request.qname = dns::testing::N(name);
  request.client_transport = transport;
  return request;
}

// Resolves and runs the loop until the callback ran.
inline Result ResolveAndWait(loop::Loop& loop, Forwarder& forwarder, const Request& request,
                             const UpstreamSet& set) {
  std::optional<Result> result;
  forwarder.Resolve(request, set, [&](const Result& r) { result = r; });
  REQUIRE(RunUntil(loop, [&] { return result.has_value(); }));
  return *result;
}

// Budgets small enough to fill with a few queries: the process ceiling, per route, per
// upstream.
inline std::shared_ptr<ForwardBudgets> Budgets(size_t process, size_t route, size_t upstream) {
  return std::make_shared<ForwardBudgets>(ForwardBudgets::Limits{process, route, upstream});
}

// Sends `count` distinct queries (`prefix`0.example., ...) and keeps their results.
inline void ResolveMany(Forwarder& forwarder, const std::string& prefix, int count,
                        const UpstreamSet& set, std::vector<Result>* results) {
  for (int i = 0; i < count; ++i) {
    forwarder.Resolve(Req(prefix + std::to_string(i) + ".example."), set,
                      [results](const Result& r) { results->push_back(r); });
  }
}

inline size_t Count(const std::vector<Result>& results, ForwardOutcome outcome, FailReason reason) {
  size_t n = 0;
  for (const Result& r : results) n += r.outcome == outcome && r.reason == reason ? 1 : 0;
  return n;
}

inline std::string AnswerAddress(const Result& result) {
  REQUIRE(result.outcome == ForwardOutcome::kAnswer);
  REQUIRE(result.message.answers.size() == 1);
  return std::get<dns::RdataA>(result.message.answers[0].rdata).address.ToString();
}

inline loop::SocketAddress Client(const char* ip) {
  return *loop::SocketAddress::FromHostPort(ip, 40000);
}

inline Request ReqFrom(std::string_view name, const char* client) {
  Request request = Req(name);
  request.client = Client(client);
  return request;
}

}  // namespace kdns::upstream::testing

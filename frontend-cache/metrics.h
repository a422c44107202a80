// The metrics frontend-cache's DNS threads record per query, registered on the program's
// Registry. Everything else (cache, upstream and forwarder figures) is read from its owner
// at scrape time by callbacks FrontendServer registers.
//
//   kdns_frontend_queries_total{type,rcode}   answered queries; both labels from small fixed
//                                             sets ("other" beyond them)
//   kdns_frontend_malformed_total             queries answered FORMERR or dropped unparsed
//   kdns_frontend_servfail_total{reason}      SERVFAILs we made, by upstream::ForwardFailure
//                                             (kubedns's words): timeout, upstream_error,
//                                             network_error, no_upstreams, overloaded (over
//                                             a forwarding budget), upstream_down (every
//                                             upstream of the route known down), bad_reply,
//                                             shutdown
//   kdns_frontend_local_answers_total{kind}   answered without upstream: chaos, nxdomain
//                                             (a local-only --server=/domain/), refused
//                                             (no upstream), loop_probe
//   kdns_frontend_answer_duration_seconds{source}
//                                             what a client waited: from the query's
//                                             hand-over to the handler to its answer, by
//                                             where the answer came from (Source)
//
// Every counter is resolved at construction, so recording is a per-thread increment with no
// lookup. Thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

#include "common/dns/types.h"
#include "common/metrics/counter.h"
#include "common/metrics/registry.h"
#include "common/server/query_log.h"
#include "common/upstream/forward_outcome.h"

namespace kdns::frontend {

class FrontendMetrics {
 public:
  static constexpr std::array<dns::RrType, 10> kTypes = {
      dns::RrType::kA,   dns::RrType::kAaaa,  dns::RrType::kPtr, dns::RrType::kSrv,
      dns::RrType::kTxt, dns::RrType::kCname, dns::RrType::kMx,  dns::RrType::kNs,
      dns::RrType::kSoa, dns::RrType::kAny};
  static constexpr std::array<dns::Rcode, 6> kRcodes = {
      dns::Rcode::kNoError, dns::Rcode::kNxDomain, dns::Rcode::kServFail,
      dns::Rcode::kRefused, dns::Rcode::kFormErr,  dns::Rcode::kNotImp};
  // kHosts..kBogusPriv: local_answers.h's reasons, in LocalAnswer::Reason's order.
  enum class Local : uint8_t {
    kChaos,
    kNxDomain,
    kRefused,
    kLoopProbe,
    kHosts,
    kAddress,
    kFilterAaaa,
    kDomainNeeded,
    kBogusPriv,
    kCount
  };
  using AnswerClock = std::chrono::steady_clock;

  explicit FrontendMetrics(metrics::Registry& registry);

  void Answered(dns::RrType type, dns::Rcode rcode) {
    queries_[TypeIndex(type)][RcodeIndex(rcode)]->Inc();
  }
  void Malformed() { malformed_->Inc(); }
  // A SERVFAIL we answered because the forwarder gave no usable answer (never kChain).
  void ServFail(upstream::ForwardFailure failure) {
    servfail_[static_cast<size_t>(failure)]->Inc();
  }
  void LocalAnswer(Local kind) { local_[static_cast<size_t>(kind)]->Inc(); }
  // An answer sent now to a query the handler was given at `start`, by its source
  // (server::AnswerSource, the `source` label).
  void AnswerTime(server::AnswerSource source, AnswerClock::time_point start) {
    answer_seconds_[static_cast<size_t>(source)]->Observe(
        std::chrono::duration<double>(AnswerClock::now() - start).count());
  }

 private:
  static size_t TypeIndex(dns::RrType type);
  static size_t RcodeIndex(dns::Rcode rcode);

  // [type index (kTypes.size() = other)][rcode index (kRcodes.size() = other)]
  std::array<std::array<metrics::Counter*, kRcodes.size() + 1>, kTypes.size() + 1> queries_{};
  metrics::Counter* malformed_ = nullptr;
  // By ForwardFailure; kChain (kubedns's) has no series here.
  std::array<metrics::Counter*, upstream::kForwardFailures> servfail_{};
  std::array<metrics::Counter*, static_cast<size_t>(Local::kCount)> local_{};
  std::array<metrics::Histogram*, server::kAnswerSources> answer_seconds_{};
};

}  // namespace kdns::frontend

// How a forwarded query ended, in the words both DNS servers use: the Forwarder's outcome
// and failure reason (ForwardOutcome, FailReason: the detail, for logs), and the reason a
// query was answered SERVFAIL as the metrics count it (ForwardFailure: the `reason` label
// of frontend-cache's kdns_frontend_servfail_total and kubedns's
// kdns_kubedns_forward_failures_total). One mapping from the first to the second,
// ForwardFailureOf, so the two programs count one failure under one name. Values; no
// thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kdns::upstream {

enum class ForwardOutcome : uint8_t {
  kAnswer,      // `reply` is the upstream's answer (any rcode but the failover ones)
  kServFail,    // no usable answer; `reason` says why
  kOverloaded,  // over a budget (`reason` says which): not forwarded; serve stale or SERVFAIL
};
enum class FailReason : uint8_t {
  kNone,
  kTimeout,        // no reply within the time budget
  kUpstreamError,  // every server replied SERVFAIL/REFUSED/NOTIMP/FORMERR (`reply` is the last)
  kNetworkError,   // sockets failed or connections were refused
  kNoUpstreams,    // the set is empty, or every server in it is loop-disabled
  kShutdown,       // CancelAll()
  kUpstreamDown,   // every server of the set is known down: failed at once (kServFail)
  // kOverloaded, by budget (forward_budgets.h):
  kForwardMax,       // the process ceiling (--dns-forward-max, --forward-max)
  kRouteBudget,      // the route's budget
  kUpstreamBudget,   // the budget of every server of the set that was not tried yet
  kWaitersPerQuery,  // Options::max_waiters_per_query waiters already on this query
};
const char* ForwardOutcomeName(ForwardOutcome outcome);
const char* FailReasonName(FailReason reason);

// Why a query was answered SERVFAIL made here, as the metrics label it. Every budget is
// one `overloaded`; kBadReply: an answer that matched the question yet did not parse
// whole; kChain: kubedns only, an ExternalName chain it could not complete.
enum class ForwardFailure : uint8_t {
  kTimeout,
  kUpstreamError,
  kNetworkError,
  kNoUpstreams,
  kOverloaded,
  kShutdown,
  kUpstreamDown,
  kBadReply,
  kChain,
  kCount,
};
inline constexpr size_t kForwardFailures = static_cast<size_t>(ForwardFailure::kCount);
// The label value: "timeout", "upstream_error", "network_error", "no_upstreams",
// "overloaded", "shutdown", "upstream_down", "bad_reply", "chain".
const char* ForwardFailureName(ForwardFailure failure);
// The failure a Forwarder result stands for: kOverloaded for ForwardOutcome::kOverloaded
// and for every budget.
ForwardFailure ForwardFailureOf(ForwardOutcome outcome, FailReason reason);

}  // namespace kdns::upstream

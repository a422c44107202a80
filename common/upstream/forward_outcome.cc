#include "common/upstream/forward_outcome.h"

namespace kdns::upstream {

const char* ForwardOutcomeName(ForwardOutcome outcome) {
  switch (outcome) {
    case ForwardOutcome::kAnswer:
      return "answer";
    case ForwardOutcome::kServFail:
      return "servfail";
    case ForwardOutcome::kOverloaded:
      return "overloaded";
  }
  return "?";
}

const char* FailReasonName(FailReason reason) {
  switch (reason) {
    case FailReason::kNone:
      return "none";
    case FailReason::kTimeout:
      return "timeout";
    case FailReason::kUpstreamError:
      return "upstream error";
    case FailReason::kNetworkError:
      return "network error";
    case FailReason::kNoUpstreams:
      return "no upstreams";
    case FailReason::kShutdown:
      return "shutdown";
    case FailReason::kUpstreamDown:
      return "upstream down";
    case FailReason::kForwardMax:
      return "forward max";
    case FailReason::kRouteBudget:
      return "route budget";
    case FailReason::kUpstreamBudget:
      return "upstream budget";
    case FailReason::kWaitersPerQuery:
      return "waiters per query";
  }
  return "?";
}

const char* ForwardFailureName(ForwardFailure failure) {
  switch (failure) {
    case ForwardFailure::kTimeout:
      return "timeout";
    case ForwardFailure::kUpstreamError:
      return "upstream_error";
    case ForwardFailure::kNetworkError:
      return "network_error";
    case ForwardFailure::kNoUpstreams:
      return "no_upstreams";
    case ForwardFailure::kOverloaded:
      return "overloaded";
    case ForwardFailure::kShutdown:
      return "shutdown";
    case ForwardFailure::kUpstreamDown:
      return "upstream_down";
    case ForwardFailure::kBadReply:
      return "bad_reply";
    case ForwardFailure::kChain:
      return "chain";
    case ForwardFailure::kCount:
      break;
  }
  return "other";
}

ForwardFailure ForwardFailureOf(ForwardOutcome outcome, FailReason reason) {
  if (outcome == ForwardOutcome::kOverloaded) return ForwardFailure::kOverloaded;
  switch (reason) {
    case FailReason::kTimeout:
      return ForwardFailure::kTimeout;
    case FailReason::kUpstreamError:
      return ForwardFailure::kUpstreamError;
    case FailReason::kNoUpstreams:
      return ForwardFailure::kNoUpstreams;
    case FailReason::kShutdown:
      return ForwardFailure::kShutdown;
    case FailReason::kUpstreamDown:
      return ForwardFailure::kUpstreamDown;
    case FailReason::kForwardMax:
    case FailReason::kRouteBudget:
    case FailReason::kUpstreamBudget:
    case FailReason::kWaitersPerQuery:
      return ForwardFailure::kOverloaded;
    case FailReason::kNetworkError:
    case FailReason::kNone:  // never with a failure: kServFail always carries a reason
      break;
  }
  return ForwardFailure::kNetworkError;
}

}  // namespace kdns::upstream

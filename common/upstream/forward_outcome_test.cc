#include "common/upstream/forward_outcome.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::upstream {
namespace {

TEST_CASE("A forward failure's label is the one both programs' metrics show",
          "[upstream][forward_outcome]") {
  // Operators' dashboards read these values: they never change.
  auto [failure, label] = GENERATE(table<ForwardFailure, std::string>({
      {ForwardFailure::kTimeout, "timeout"},
      {ForwardFailure::kUpstreamError, "upstream_error"},
      {ForwardFailure::kNetworkError, "network_error"},
      {ForwardFailure::kNoUpstreams, "no_upstreams"},
      {ForwardFailure::kOverloaded, "overloaded"},
      {ForwardFailure::kShutdown, "shutdown"},
      {ForwardFailure::kUpstreamDown, "upstream_down"},
      {ForwardFailure::kBadReply, "bad_reply"},
      {ForwardFailure::kChain, "chain"},
  }));
  CHECK(ForwardFailureName(failure) == label);
}

TEST_CASE("A Forwarder result maps to one failure, every budget to overloaded",
          "[upstream][forward_outcome]") {
  auto [outcome, reason, failure] = GENERATE(table<ForwardOutcome, FailReason, ForwardFailure>({
      {ForwardOutcome::kServFail, FailReason::kTimeout, ForwardFailure::kTimeout},
      {ForwardOutcome::kServFail, FailReason::kUpstreamError, ForwardFailure::kUpstreamError},
      {ForwardOutcome::kServFail, FailReason::kNetworkError, ForwardFailure::kNetworkError},
      {ForwardOutcome::kServFail, FailReason::kNoUpstreams, ForwardFailure::kNoUpstreams},
      {ForwardOutcome::kServFail, FailReason::kShutdown, ForwardFailure::kShutdown},
      {ForwardOutcome::kServFail, FailReason::kUpstreamDown, ForwardFailure::kUpstreamDown},
      {ForwardOutcome::kServFail, FailReason::kUpstreamBudget, ForwardFailure::kOverloaded},
      {ForwardOutcome::kOverloaded, FailReason::kForwardMax, ForwardFailure::kOverloaded},
      {ForwardOutcome::kOverloaded, FailReason::kRouteBudget, ForwardFailure::kOverloaded},
      {ForwardOutcome::kOverloaded, FailReason::kWaitersPerQuery, ForwardFailure::kOverloaded},
      // frontend-cache's own waiting-queries budget names no Forwarder reason.
      {ForwardOutcome::kOverloaded, FailReason::kNone, ForwardFailure::kOverloaded},
  }));
  CHECK(ForwardFailureOf(outcome, reason) == failure);
}

TEST_CASE("Outcomes and reasons have names for the logs", "[upstream][forward_outcome]") {
  CHECK(std::string(ForwardOutcomeName(ForwardOutcome::kOverloaded)) == "overloaded");
  CHECK(std::string(FailReasonName(FailReason::kRouteBudget)) == "route budget");
}

}  // namespace
}  // namespace kdns::upstream

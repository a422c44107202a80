#include "frontend-cache/metrics.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/metrics/registry.h"

namespace kdns::frontend {
namespace {

TEST_CASE("frontend-cache counts its SERVFAILs under kubedns's reasons, chain aside",
          "[frontend][metrics]") {
  metrics::Registry registry;
  FrontendMetrics metrics(registry);
  metrics.ServFail(upstream::ForwardFailure::kBadReply);
  metrics.ServFail(upstream::ForwardFailureOf(upstream::ForwardOutcome::kOverloaded,
                                              upstream::FailReason::kNone));
  const std::string text = registry.Render();
  for (const char* reason : {"timeout", "upstream_error", "network_error", "no_upstreams",
                             "shutdown", "upstream_down"}) {
    CHECK(text.find("kdns_frontend_servfail_total{reason=\"" + std::string(reason) + "\"} 0") !=
          std::string::npos);
  }
  CHECK(text.find("kdns_frontend_servfail_total{reason=\"bad_reply\"} 1") != std::string::npos);
  CHECK(text.find("kdns_frontend_servfail_total{reason=\"overloaded\"} 1") != std::string::npos);
  CHECK(text.find("reason=\"chain\"") == std::string::npos);
}

}  // namespace
}  // namespace kdns::frontend

#include "common/upstream/upstream_health.h"

#include <catch2/catch.hpp>

namespace kdns::upstream {
namespace {

UpstreamHealth::Options Opts() {
  UpstreamHealth::Options options;
  options.min_try_timeout_ms = 100;
  options.max_try_timeout_ms = 1500;
  options.failure_threshold = 2;
  return options;
}

TEST_CASE("An unmeasured upstream gets the longest try timeout and sorts first", "[upstream]") {
  UpstreamHealth health(Opts());
  CHECK_FALSE(health.srtt_ms().has_value());
  CHECK(health.TryTimeoutMs() == 1500);
  CHECK(health.SelectionRttMs() == 0);
  CHECK_FALSE(health.failed());
}

TEST_CASE("The try timeout follows RFC 6298 from the smoothed RTT", "[upstream]") {
  UpstreamHealth health(Opts());
  health.OnReply(40);
  CHECK(health.srtt_ms() == 40);
  CHECK(health.TryTimeoutMs() == 120);  // 40 + 4 * 20
  for (int i = 0; i < 50; ++i) health.OnReply(40);
  CHECK(health.srtt_ms() == 40);
  CHECK(health.TryTimeoutMs() == 100);  // variance gone: clamped to the minimum
  health.OnReply(400);
  CHECK(*health.srtt_ms() == 85);  // 40 + (400 - 40) / 8
  CHECK(health.TryTimeoutMs() > 85);
}

TEST_CASE("Failures back the timeout off and mark the upstream failed until it answers",
          "[upstream]") {
  UpstreamHealth health(Opts());
  health.OnReply(100);
  const uint64_t base = health.TryTimeoutMs();
  health.OnFailure();
  CHECK(health.TryTimeoutMs() == std::min<uint64_t>(base * 2, 1500));
  CHECK_FALSE(health.failed());
  health.OnFailure();
  CHECK(health.failed());
  for (int i = 0; i < 20; ++i) health.OnFailure();
  CHECK(health.TryTimeoutMs() == 1500);
  health.OnProbeSuccess(10);
  CHECK_FALSE(health.failed());
  CHECK(health.consecutive_failures() == 0);
}

TEST_CASE("Only an unanswered probe marks an upstream down, and any reply ends it", "[upstream]") {
  UpstreamHealth health(Opts());
  for (int i = 0; i < 5; ++i) health.OnFailure();
  CHECK(health.failed());
  CHECK_FALSE(health.down());  // slow on some names is not down
  health.OnProbeFailure();
  CHECK(health.down());
  CHECK(health.failed());
  health.OnReply(30);  // a late answer, or the next probe's
  CHECK_FALSE(health.down());
  CHECK_FALSE(health.failed());
}

TEST_CASE("max_fails unanswered probes in a row make an upstream down; 0 never does",
          "[upstream][route_options]") {
  UpstreamHealth health(Opts());
  for (int i = 0; i < 5; ++i) health.OnFailure();
  health.set_max_fails(3);
  health.OnProbeFailure();
  health.OnProbeFailure();
  CHECK_FALSE(health.down());
  health.OnProbeFailure();
  CHECK(health.down());
  health.OnReply(30);
  CHECK_FALSE(health.down());
  // The count starts again after a reply.
  for (int i = 0; i < 5; ++i) health.OnFailure();
  health.OnProbeFailure();
  CHECK_FALSE(health.down());

  health.OnProbeFailure();
  health.OnProbeFailure();
  REQUIRE(health.down());
  // A reload that sets max_fails=0 ends it: such a server is never probed again, so no
  // probe could.
  health.set_max_fails(0);
  CHECK_FALSE(health.down());
  for (int i = 0; i < 10; ++i) health.OnProbeFailure();
  CHECK_FALSE(health.down());
  CHECK(health.failed());
}

}  // namespace
}  // namespace kdns::upstream

#include "sidecar/health.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::sidecar {
namespace {

TEST_CASE("Before the first probe the health check is 503, waiting", "[sidecar][health]") {
  const ProbeStatus status;
  const http::Response response = HealthResponse(status);
  CHECK(response.status == 503);
  CHECK(response.content_type == "application/json");
  CHECK(response.body == R"({"IsOk":false,"LatencySeconds":0,"Err":"waiting for first probe"})");
}

TEST_CASE("A passing probe is 200 with its latency in seconds", "[sidecar][health]") {
  ProbeStatus status;
  status.ok = true;
  status.latency_ns = 412'345;
  status.error.clear();
  const http::Response response = HealthResponse(status);
  CHECK(response.status == 200);
  CHECK(response.content_type == "application/json");
  CHECK(response.body == R"({"IsOk":true,"LatencySeconds":0.000412345,"Err":""})");

  status.latency_ns = 1'250'000'000;
  CHECK(HealthJson(status) == R"({"IsOk":true,"LatencySeconds":1.25,"Err":""})");
  status.latency_ns = 900;
  CHECK(HealthJson(status) == R"({"IsOk":true,"LatencySeconds":9e-7,"Err":""})");
}

TEST_CASE("A failing probe is 503 with kube-dns's error text", "[sidecar][health]") {
  ProbeStatus status;
  status.ok = false;
  status.latency_ns = 0;
  status.error = "no RRs for domain \"nope.example.test.\"";
  const http::Response response = HealthResponse(status);
  CHECK(response.status == 503);
  CHECK(response.body ==
        R"({"IsOk":false,"LatencySeconds":0,"Err":"no RRs for domain \"nope.example.test.\""})");
  status.error = "query ANY \"a.\" to 127.0.0.1:53: connection refused";
  CHECK(
      HealthJson(status) ==
      R"({"IsOk":false,"LatencySeconds":0,"Err":"query ANY \"a.\" to 127.0.0.1:53: connection refused"})");
}

TEST_CASE("healthz says ok with the time as Go prints it", "[sidecar][health]") {
  CHECK(HealthzBody(0, 0) == "ok (1970-01-01 00:00:00 +0000 UTC)\n");
  CHECK(HealthzBody(1714564800, 500'000'000) == "ok (2024-05-01 12:00:00.5 +0000 UTC)\n");
  CHECK(HealthzBody(1714564800, 123'456'789) == "ok (2024-05-01 12:00:00.123456789 +0000 UTC)\n");
  CHECK(HealthzBody(1714564800, 1'000) == "ok (2024-05-01 12:00:00.000001 +0000 UTC)\n");
}

}  // namespace
}  // namespace kdns::sidecar

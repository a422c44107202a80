// What the sidecar's HTTP endpoints say about health, byte for byte as kube-dns's sidecar
// (pkg/sidecar/dnsprobe.go httpHandler, metrics.go /healthz):
//
//   GET /healthcheck/<label>   200 {"IsOk":true,"LatencySeconds":0.000412,"Err":""}
//                              503 {"IsOk":false,"LatencySeconds":0,"Err":"<why>"}
//                              Content-Type: application/json, no trailing newline;
//                              "waiting for first probe" until the first probe ends.
//   GET /healthz               200 "ok (<Go time.Now()>)\n" (the process is up; it does not
//                              depend on any probe, as in kube-dns)
//
// Pure. Thread: values.
#pragma once

#include <cstdint>
#include <string>

#include "common/http/response.h"

namespace kdns::sidecar {

inline constexpr char kWaitingForFirstProbe[] = "waiting for first probe";

// The last outcome of one probe (kube-dns's lastError and lastResolveLatency).
struct ProbeStatus {
  bool ok = false;
  int64_t latency_ns = 0;  // of the last probe when it succeeded; 0 after a failure
  std::string error = kWaitingForFirstProbe;
};

// {"IsOk":...,"LatencySeconds":...,"Err":...} as Go's json.Marshal writes it.
std::string HealthJson(const ProbeStatus& status);

// 200 when ok, 503 otherwise, with HealthJson as an application/json body.
http::Response HealthResponse(const ProbeStatus& status);

// "ok (2024-05-01 12:00:00.5 +0000 UTC)\n": Go's Time.String() of the wall clock, in UTC.
std::string HealthzBody(int64_t unix_s, int64_t nanos);

}  // namespace kdns::sidecar

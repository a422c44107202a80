#include "sidecar/health.h"

#include <ctime>

#include "sidecar/go_format.h"

namespace kdns::sidecar {

std::string HealthJson(const ProbeStatus& status) {
  std::string out = "{\"IsOk\":";
  out += status.ok ? "true" : "false";
  out += ",\"LatencySeconds\":";
  out += GoJsonFloat(status.ok ? GoSeconds(status.latency_ns) : 0.0);
  out += ",\"Err\":";
  out += GoJsonString(status.ok ? std::string() : status.error);
  out += '}';
  return out;
}

http::Response HealthResponse(const ProbeStatus& status) {
  http::Response response;
  response.status = status.ok ? 200 : 503;
  response.content_type = "application/json";
  response.body = HealthJson(status);
  return response;
}

std::string HealthzBody(int64_t unix_s, int64_t nanos) {
  const time_t seconds = static_cast<time_t>(unix_s);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char date[32];
  strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &utc);
  std::string text = std::string("ok (") + date;
  if (nanos > 0) {
    // Go's .999999999: the fraction without trailing zeros.
    std::string fraction = std::to_string(1'000'000'000 + nanos % 1'000'000'000).substr(1);
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
    text += "." + fraction;
  }
  text += " +0000 UTC)\n";
  return text;
}

}  // namespace kdns::sidecar

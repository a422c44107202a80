#include "common/server/rate_limits.h"

#include <cstdio>
#include <string_view>
#include <utility>

#include "common/base/clock.h"
#include "common/server/waiting_queries.h"

namespace kdns::server {
namespace {

bool InRange(int64_t value, int64_t low, int64_t high, std::string_view flag, std::string* error) {
  if (value >= low && value <= high) return true;
  *error = "--" + std::string(flag) + "=" + std::to_string(value) + ": must be " +
           std::to_string(low) + ".." + std::to_string(high);
  return false;
}

std::string_view OverloadName(Overload overload) {
  switch (overload) {
    case Overload::kReceiveBacklog:
      return "receive_backlog";
    case Overload::kWaitingQueries:
      return "waiting_queries";
    case Overload::kNone:
      break;
  }
  return "none";
}

}  // namespace

bool MakeRateLimits(const RateLimitFlags& flags, const std::shared_ptr<WaitingBudget>& waiting,
                    RateLimits* out, std::string* error) {
  constexpr int64_t kMaxRate = 10'000'000;
  if (!InRange(flags.client_rate_limit, 0, kMaxRate, "client-rate-limit", error) ||
      !InRange(flags.client_rate_burst, 0, kMaxRate, "client-rate-burst", error) ||
      !InRange(flags.client_rate_prefix_v4, 1, 32, "client-rate-prefix-v4", error) ||
      !InRange(flags.client_rate_prefix_v6, 1, 128, "client-rate-prefix-v6", error) ||
      !InRange(flags.client_rate_slip, 0, 10, "client-rate-slip", error) ||
      !InRange(flags.rrl_responses_per_second, 0, kMaxRate, "rrl-responses-per-second", error)) {
    return false;
  }
  ClientLimitOptions clients;
  if (!ParsePrefixList(flags.client_rate_exempt, &clients.exempt, error)) {
    *error = "--client-rate-exempt: " + *error;
    return false;
  }
  clients.rate = static_cast<uint32_t>(flags.client_rate_limit);
  clients.burst = static_cast<uint32_t>(flags.client_rate_burst);
  clients.prefix_v4 = static_cast<uint8_t>(flags.client_rate_prefix_v4);
  clients.prefix_v6 = static_cast<uint8_t>(flags.client_rate_prefix_v6);
  clients.slip = static_cast<uint32_t>(flags.client_rate_slip);
  clients.waiting = waiting;
  out->clients = std::make_shared<ClientLimiter>(clients);
  if (waiting != nullptr) waiting->KeepReserveFor(out->clients);
  out->responses = nullptr;
  if (flags.rrl_responses_per_second > 0) {
    ResponseRateOptions responses;
    responses.responses_per_second = static_cast<uint32_t>(flags.rrl_responses_per_second);
    responses.slip = clients.slip;
    responses.exempt = clients.exempt;
    out->responses = std::make_shared<ResponseRateLimiter>(responses);
  }
  return true;
}

void RegisterRateLimitMetrics(metrics::Registry& registry, const RateLimits& limits) {
  std::shared_ptr<ClientLimiter> clients = limits.clients;
  std::shared_ptr<ResponseRateLimiter> responses = limits.responses;
  registry.AddCallbackGauge(
      "kdns_client_rate_tracked_clients",
      "Clients (address prefixes) the rate limiter and shedding track now.",
      [clients] { return clients ? static_cast<double>(clients->tracked()) : 0; });
  registry.AddCallbackGauge(
      "kdns_shed_cap_queries_per_second",
      "While shedding under overload, the rate above which a client's queries are shed; 0 "
      "when not shedding.",
      [clients] {
        if (!clients || clients->shed_cap() == ClientLimiter::kNotShedding) return 0.0;
        return clients->shed_cap() * 1e9 / static_cast<double>(RateTable::kWindowNs);
      });
  registry.AddCallbackCounter(
      "kdns_client_rate_slipped_total",
      "Queries over --client-rate-limit answered with TC (every --client-rate-slip-th); also "
      "counted in kdns_limit_hits_total{limit=\"client_rate\"}.",
      [clients] { return clients ? static_cast<double>(clients->slipped()) : 0; });
  registry.AddCallbackCounter(
      "kdns_rrl_slipped_total",
      "Responses over --rrl-responses-per-second sent truncated; also counted in "
      "kdns_limit_hits_total{limit=\"response_rate\"}.",
      [responses] { return responses ? static_cast<double>(responses->slipped()) : 0; });
}

http::Response TopClientsResponse(const ClientLimiter& clients, const http::Request& request) {
  size_t count = kDefaultTopClients;
  std::string_view query = request.query;
  if (query.starts_with("n=")) {
    count = 0;
    for (char c : query.substr(2)) {
      if (c < '0' || c > '9' || count > kMaxTopClients) break;
      count = count * 10 + static_cast<size_t>(c - '0');
    }
    count = std::min(count, kMaxTopClients);
  }
  const uint64_t now_ns = SteadyNowNs();
  const uint32_t cap = clients.shed_cap();
  std::string body = "{\"tracked\":" + std::to_string(clients.tracked()) +
                     ",\"capacity\":" + std::to_string(clients.capacity()) +
                     ",\"rate_limit\":" + std::to_string(clients.options().rate) +
                     ",\"shedding\":" + (cap == ClientLimiter::kNotShedding ? "false" : "true");
  if (cap != ClientLimiter::kNotShedding) {
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.0f",
                  cap * 1e9 / static_cast<double>(RateTable::kWindowNs));
    body += ",\"shed_above_qps\":" + std::string(rate) + ",\"shed_reason\":\"" +
            std::string(OverloadName(clients.shed_reason())) + "\"";
  }
  body += ",\"clients\":[";
  bool first = true;
  for (const ClientLimiter::TopClient& top : clients.Top(count, now_ns)) {
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.1f", top.queries_per_second);
    body += std::string(first ? "" : ",") + "{\"client\":\"" + top.client.ToString() +
            "\",\"qps\":" + rate + ",\"limited\":" + std::to_string(top.limited) +
            ",\"shed\":" + (top.shed ? "true" : "false") + "}";
    first = false;
  }
  body += "]}\n";
  http::Response response = http::Response::Text(200, std::move(body));
  response.content_type = "application/json";
  return response;
}

}  // namespace kdns::server

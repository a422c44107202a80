// RateLimits: the rate limits of one DNS server process, made once from the flags that
// frontend-cache and kubedns both take and given to every DnsServer of the process:
//
//   --client-rate-limit=N        responses per second per client, 0 (default): off
//   --client-rate-burst=N        responses at once, 0 (default): the limit
//   --client-rate-prefix-v4=N    the IPv4 prefix that is one client (32)
//   --client-rate-prefix-v6=N    the IPv6 prefix that is one client (64)
//   --client-rate-slip=N         every Nth limited query answered with TC (2; 0: never)
//   --client-rate-exempt=CIDR,.. never limited, shed or tracked (node-local caches, probes)
//   --rrl-responses-per-second=N identical responses per netblock and second (0: off)
//
// Fair shedding needs no flag: it is always on (client_limiter.h). Also here: the metrics
// of both limiters, and /debug/top-clients (served on the opt-in --debug-address only,
// debug_http.h: it names other pods and their rates).
//
// Thread: Make on the owning thread; the limiters are thread-safe (their headers).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/http/request_parser.h"
#include "common/http/response.h"
#include "common/metrics/registry.h"
#include "common/server/client_limiter.h"
#include "common/server/response_rate_limiter.h"

namespace kdns::server {

class WaitingBudget;

struct RateLimitFlags {
  int64_t client_rate_limit = 0;
  int64_t client_rate_burst = 0;
  int64_t client_rate_prefix_v4 = 32;
  int64_t client_rate_prefix_v6 = 64;
  int64_t client_rate_slip = 2;
  std::string client_rate_exempt;
  int64_t rrl_responses_per_second = 0;
};

struct RateLimits {
  std::shared_ptr<ClientLimiter> clients;          // always made (shedding is always on)
  std::shared_ptr<ResponseRateLimiter> responses;  // null when RRL is off
};

// Checks the flags and makes the limiters; `waiting` (optional) is the process's
// waiting-query budget: its filling up is overload, and it keeps its last slots for the
// clients the ClientLimiter calls light. False with a one-line *error naming the flag.
bool MakeRateLimits(const RateLimitFlags& flags, const std::shared_ptr<WaitingBudget>& waiting,
                    RateLimits* out, std::string* error);

// kdns_client_rate_tracked_clients, kdns_client_rate_slipped_total, kdns_rrl_slipped_total
// and kdns_shed_cap_queries_per_second (0: not shedding). The limits' hits themselves are
// kdns_limit_hits_total{limit="client_rate"|"response_rate"|"shed_*"} (common/limits/limits.h).
void RegisterRateLimitMetrics(metrics::Registry& registry, const RateLimits& limits);

// The most at most; ?n= asks for fewer or more, up to this.
inline constexpr size_t kMaxTopClients = 100;
inline constexpr size_t kDefaultTopClients = 20;

// /debug/top-clients: the heaviest clients now, as JSON (bounded by kMaxTopClients).
http::Response TopClientsResponse(const ClientLimiter& clients, const http::Request& request);

}  // namespace kdns::server

#include "common/limits/limits.h"

#include <glog/logging.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "common/base/clock.h"
#include "common/metrics/counter.h"
#include "common/metrics/shard.h"

namespace kdns::limits {
namespace {

constexpr size_t kLimits = static_cast<size_t>(Limit::kCount);

// One name a line, in Limit's order (clang-format would pack them into columns).
// clang-format off
constexpr std::array<std::string_view, kLimits> kNames = {
    "http_connections",
    "http_connections_per_source",
    "http_request_timeout",
    "tcp_connections",
    "tcp_connections_per_source",
    "tcp_frame_timeout",
    "tcp_idle_timeout",
    "tcp_output_per_connection",
    "tcp_output_total",
    "tcp_query_timeout",
    "tcp_evicted_in_flight",
    "route_in_flight",
    "upstream_in_flight",
    "upstream_down",
    "waiting_queries",
    "waiters_per_query",
    "forward_in_flight",
    "upstream_0x20_mismatch",
    "upstream_0x20_fallback",
    "route_client_share",
    "upstream_client_share",
    "cache_entry_too_large",
    "cache_bytes",
    "loop_probe_rejected",
    "client_rate",
    "response_rate",
    "shed_receive_backlog",
    "shed_waiting_queries",
    "debug_on_published_port",
    "import_invalid",
    "import_too_large",
    "import_name_conflict",
    "client_address_untrusted",
    "client_address_malformed",
    "notify_untrusted",
};
// clang-format on

// One limit's count and log state. The count is sharded per thread (metrics::Counter): a
// flood against a limit is counted on every DNS thread at once, one hit per datagram, and a
// shared atomic would bounce its cache line between them. The log state is read by every hit
// but written once per log interval, so it stays shared, on its own line.
struct Slot {
  metrics::Counter hits;
  struct alignas(metrics::kCacheLineBytes) {
    std::atomic<uint64_t> next_log_ms{0};
    std::mutex log_mutex;
    uint64_t hits_at_last_log = 0;  // guarded by log_mutex
  } log;
};

std::array<Slot, kLimits>& Slots() {
  static auto* slots = new std::array<Slot, kLimits>();  // never destroyed: used at exit
  return *slots;
}

class LimitCollector final : public metrics::Collector {
 public:
  void Collect(std::vector<metrics::Sample>& out) const override {
    for (size_t i = 0; i < kLimits; ++i) {
      out.push_back({{std::string(kNames[i])}, static_cast<double>(Slots()[i].hits.Value())});
    }
  }
};

}  // namespace

std::string_view LimitName(Limit limit) {
  const auto index = static_cast<size_t>(limit);
  return index < kLimits ? kNames[index] : "unknown";
}

void RecordLimitHit(Limit limit, std::string_view detail) {
  const auto index = static_cast<size_t>(limit);
  if (index >= kLimits) return;
  Slot& slot = Slots()[index];
  slot.hits.Inc();
  const uint64_t now = SteadyClock::Instance().NowMs();
  if (now < slot.log.next_log_ms.load(std::memory_order_relaxed)) return;
  std::unique_lock lock(slot.log.log_mutex, std::try_to_lock);
  if (!lock.owns_lock() || now < slot.log.next_log_ms.load(std::memory_order_relaxed)) return;
  slot.log.next_log_ms.store(now + kLimitLogIntervalMs, std::memory_order_relaxed);
  const uint64_t hits = slot.hits.Value();
  // Per-shard sums read at different times: never report a negative difference.
  const uint64_t since = hits > slot.log.hits_at_last_log ? hits - slot.log.hits_at_last_log : 0;
  slot.log.hits_at_last_log = hits;
  LOG(WARNING) << "limit " << kNames[index] << " hit" << (detail.empty() ? "" : " (") << detail
               << (detail.empty() ? "" : ")") << "; " << since << " time(s) since the last line, "
               << hits << " in all (kdns_limit_hits_total)";
}

uint64_t LimitHits(Limit limit) {
  const auto index = static_cast<size_t>(limit);
  return index < kLimits ? Slots()[index].hits.Value() : 0;
}

void RegisterLimitMetrics(metrics::Registry& registry) {
  registry.AddCollector("kdns_limit_hits_total",
                        "Times a limit protecting the server was hit, by limit (see the "
                        "operators' guide, Limits).",
                        metrics::MetricType::kCounter, {"limit"},
                        std::make_shared<LimitCollector>());
}

}  // namespace kdns::limits

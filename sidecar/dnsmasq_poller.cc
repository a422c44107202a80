#include "sidecar/dnsmasq_poller.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/metrics/text_format.h"

namespace kdns::sidecar {
namespace {

struct Legacy {
  DnsmasqStat stat;
  const char* name;
  const char* help;
};

// kube-dns's names and help texts (pkg/sidecar/metrics.go), all counters.
constexpr Legacy kLegacy[] = {
    {DnsmasqStat::kHits, "hits", "Number of DNS cache hits (from start of process)"},
    {DnsmasqStat::kMisses, "misses", "Number of DNS cache misses (from start of process)"},
    {DnsmasqStat::kEvictions, "evictions",
     "Counter of DNS cache evictions (from start of process)"},
    {DnsmasqStat::kInsertions, "insertions",
     "Counter of DNS cache insertions (from start of process)"},
    {DnsmasqStat::kCacheSize, "max_size", "Maximum size of the DNS cache"},
};

// `<stat>.bind. CH TXT`, RD set as kube-dns's client sends it.
std::vector<uint8_t> StatQuery(DnsmasqStat stat) {
  std::array<uint8_t, dns::kMaxUdpSizeWithoutEdns> buffer{};
  dns::MessageBuilder builder(buffer);
  builder.header().rd = true;
  std::optional<dns::Name> name = dns::Name::FromText(DnsmasqStatQueryName(stat));
  CHECK(name.has_value());
  CHECK(builder.AddQuestion(*name, dns::RrType::kTxt, dns::RrClass::kCh) == dns::BuildError::kOk);
  std::span<const uint8_t> query = builder.Finish();
  return {query.begin(), query.end()};
}

}  // namespace

DnsmasqPoller::DnsmasqPoller(loop::Loop& loop, Options options, metrics::Registry& registry)
    : loop_(loop),
      options_(std::move(options)),
      timer_(loop),
      errors_(registry.AddCounter(
          metrics::BuildFqName(options_.prometheus_namespace, "dnsmasq", "errors"),
          "Number of errors that have occurred getting metrics")),
      last_success_s_(registry.AddGauge(
          "kdns_sidecar_dnsmasq_last_poll_success_timestamp_seconds",
          "Unix time of the last complete read of the cache's statistics (0: none yet).")) {
  for (const Legacy& legacy : kLegacy) {
    const std::atomic<uint64_t>* value = &exported_[static_cast<size_t>(legacy.stat)];
    registry.AddCallbackCounter(
        metrics::BuildFqName(options_.prometheus_namespace, "dnsmasq", legacy.name), legacy.help,
        [value] { return static_cast<double>(value->load(std::memory_order_relaxed)); });
  }
  registry.AddCallbackGauge(
      "kdns_sidecar_dnsmasq_cache_size", "The cache size the cache reported last.",
      [this] { return static_cast<double>(current_cache_size_.load(std::memory_order_relaxed)); });
  registry.AddCallbackCounter(
      "kdns_sidecar_dnsmasq_restarts_total",
      "Restarts of the cache recognised from its counters going back.",
      [this] { return static_cast<double>(restarts_.load(std::memory_order_relaxed)); });
}

DnsmasqPoller::~DnsmasqPoller() = default;

bool DnsmasqPoller::Start(std::string* error) {
  ares::Channel::Options channel_options;
  channel_options.servers = {options_.server};
  channel_options.timeout_ms = std::min(options_.timeout_ms, options_.poll_interval_ms);
  channel_options.tries = 1;
  channel_ = ares::Channel::Create(loop_, channel_options, error);
  if (channel_ == nullptr) {
    *error = "--dnsmasq-addr: " + *error;
    return false;
  }
  timer_.Start(0, [this] { StartRound(); });
  return true;
}

void DnsmasqPoller::StartRound() {
  DCHECK(!in_round_);
  in_round_ = true;
  loop_.UpdateTime();
  round_start_ms_ = loop_.now_ms();
  values_ = {};
  round_error_.clear();
  replies_ = 0;
  for (DnsmasqStat stat : kAllDnsmasqStats) {
    channel_->Send(StatQuery(stat),
                   [this, stat](ares::Channel::Reply reply) { OnReply(stat, std::move(reply)); });
  }
}

void DnsmasqPoller::OnReply(DnsmasqStat stat, ares::Channel::Reply reply) {
  if (reply.status != ARES_SUCCESS) {
    if (round_error_.empty()) {
      round_error_ = std::string(DnsmasqStatQueryName(stat)) + " from " +
                     options_.server.ToString() + ": " + ares::Channel::StatusText(reply.status);
    }
  } else {
    uint64_t value = 0;
    std::string error;
    if (ParseStatReply(reply.bytes, stat, &value, &error)) {
      values_[static_cast<size_t>(stat)] = value;
    } else if (round_error_.empty()) {
      round_error_ = error + " (from " + options_.server.ToString() + ")";
    }
  }
  if (++replies_ == kDnsmasqStatCount) FinishRound();
}

void DnsmasqPoller::FinishRound() {
  in_round_ = false;
  ++rounds_done_;
  if (round_error_.empty()) {
    DnsmasqValues values{};
    for (size_t i = 0; i < kDnsmasqStatCount; ++i) values[i] = *values_[i];
    if (mirror_.Observe(values)) {
      LOG(INFO) << "the cache at " << options_.server.ToString()
                << " restarted (its counters went back); counting on from where they were";
    }
    for (DnsmasqStat stat : kAllDnsmasqStats) {
      exported_[static_cast<size_t>(stat)].store(mirror_.Exported(stat), std::memory_order_relaxed);
    }
    current_cache_size_.store(mirror_.Current(DnsmasqStat::kCacheSize), std::memory_order_relaxed);
    restarts_.store(mirror_.restarts(), std::memory_order_relaxed);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    last_success_s_.Set(std::chrono::duration<double>(now).count());
    last_error_.clear();
  } else {
    errors_.Inc();
    LOG_EVERY_N(WARNING, 20) << "error getting metrics from the cache: " << round_error_;
    last_error_ = round_error_;
  }
  loop_.UpdateTime();
  const uint64_t elapsed_ms = loop_.now_ms() - round_start_ms_;
  const uint64_t interval_ms = options_.poll_interval_ms;
  timer_.Start(elapsed_ms < interval_ms ? interval_ms - elapsed_ms : 0, [this] { StartRound(); });
}

}  // namespace kdns::sidecar

// DnsmasqPoller: reads the cache's statistics every --dnsmasq-poll-interval-ms with the
// five CHAOS TXT queries (sent together through one ares::Channel) and exports them with
// kube-dns's names, types and help texts (pkg/sidecar/metrics.go):
//
//   <ns>_dnsmasq_hits        counter  Number of DNS cache hits (from start of process)
//   <ns>_dnsmasq_misses      counter  Number of DNS cache misses (from start of process)
//   <ns>_dnsmasq_evictions   counter  Counter of DNS cache evictions (from start of process)
//   <ns>_dnsmasq_insertions  counter  Counter of DNS cache insertions (from start of process)
//   <ns>_dnsmasq_max_size    counter  Maximum size of the DNS cache
//   <ns>_dnsmasq_errors      counter  Number of errors that have occurred getting metrics
//
// plus ours: kdns_sidecar_dnsmasq_cache_size (gauge, as reported now),
// kdns_sidecar_dnsmasq_restarts_total (restarts recognised from counters going back) and
// kdns_sidecar_dnsmasq_last_poll_success_timestamp_seconds.
//
// A round is all or nothing: if any of the five answers is missing (timeout, refused) or
// malformed, the round counts one error and nothing new is exported (the counters keep
// their last values), as in kube-dns. Values go through CounterMirror, so the counters
// never decrease when the cache restarts. The next round starts one interval after the
// previous one started, never while one is running; the first starts at once.
//
// Thread: the loop's thread; the exported values are atomics, so /metrics may render on
// any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/ares/channel.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"
#include "common/metrics/registry.h"
#include "sidecar/dnsmasq_stats.h"

namespace kdns::sidecar {

class DnsmasqPoller {
 public:
  struct Options {
    loop::SocketAddress server;
    uint64_t poll_interval_ms = 5000;
    // Per query; a round takes at most this long (the five queries go out together).
    // Capped at the poll interval.
    uint64_t timeout_ms = 2000;
    std::string prometheus_namespace = "kubedns";
  };

  DnsmasqPoller(loop::Loop& loop, Options options, metrics::Registry& registry);
  ~DnsmasqPoller();
  DnsmasqPoller(const DnsmasqPoller&) = delete;
  DnsmasqPoller& operator=(const DnsmasqPoller&) = delete;

  // Sets up c-ares and starts the first round. False with *error.
  [[nodiscard]] bool Start(std::string* error);

  uint64_t rounds_done() const { return rounds_done_; }
  uint64_t errors() const { return errors_.Value(); }
  const CounterMirror& mirror() const { return mirror_; }
  const std::string& last_error() const { return last_error_; }

 private:
  void StartRound();
  void OnReply(DnsmasqStat stat, ares::Channel::Reply reply);
  void FinishRound();

  loop::Loop& loop_;
  Options options_;
  std::unique_ptr<ares::Channel> channel_;
  loop::Timer timer_;
  CounterMirror mirror_;
  // What /metrics shows, published after each successful round.
  std::array<std::atomic<uint64_t>, kDnsmasqStatCount> exported_{};
  std::atomic<uint64_t> current_cache_size_{0};
  std::atomic<uint64_t> restarts_{0};
  metrics::Counter& errors_;
  metrics::Gauge& last_success_s_;

  // The round in flight.
  std::array<std::optional<uint64_t>, kDnsmasqStatCount> values_;
  std::string round_error_;
  size_t replies_ = 0;
  uint64_t round_start_ms_ = 0;
  bool in_round_ = false;
  uint64_t rounds_done_ = 0;
  std::string last_error_;
};

}  // namespace kdns::sidecar

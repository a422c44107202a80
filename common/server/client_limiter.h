// ClientLimiter: what one client may take of a DNS server over UDP (issue 16, DESIGN §7),
// checked for every datagram before it is parsed, by both servers; a trusted forwarder's
// queries (frontend-cache's, to kubedns) once parsed, as the client they name (admission.h). A
// client is an address prefix (/32 for IPv4 and /64 for IPv6 by default: in a cluster a /24 is a
// whole node's pods). Two mechanisms share one RateTable of clients:
//
// - The rate limit (--client-rate-limit, off by default in the binaries, on in the
//   manifests): a token bucket of `rate` responses per second and `burst` at once. Over it
//   a query is dropped (kLimited), except every `slip`-th one, answered with TC (kSlip) so
//   that a real resolver retries over TCP, as BIND's RRL does. TCP is not rate limited:
//   it is bounded by the connection caps, and it is where a slipped client goes.
//
// - Fair shedding (always on unless `shed` is false): while the server cannot keep up (its
//   receive queue backs up, or the waiting-query budget is nearly full), the heaviest
//   clients' queries are dropped first (kShed). Each serving thread reports what it sees
//   to Tick about every kTickNs; once per tick, if it saw overload, the limiter sets a cap
//   on arrivals per window (RateTable::kWindowNs) that cuts the load the clients are let
//   in with by a quarter, never below the median client's rate (water-filling: the heavy
//   are cut down to a common level, the light are untouched). A client over the cap gets
//   the cap and loses the rest before it is parsed. After a second with no overload the
//   cap rises by half per tick until it is gone. The waiting-query budget also keeps its
//   last tenth for clients at most twice the median (IsLight), which protects light
//   clients from the first moment of a flood of misses, before the cap has come down.
//
// Every kLogIntervalNs at most, while clients are limited or shed, one line names the
// heaviest (the same as /debug/top-clients shows).
//
// Exempt prefixes (--client-rate-exempt: node-local caches, the nanny's probes) are
// neither limited, shed nor tracked. Nothing is allocated per query; memory is the
// table's, fixed at construction.
//
// Thread: Check and Tick from any thread at once (serving threads, receiver threads);
// Top and the counters from any thread (the metrics and /debug/top-clients).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_prefix.h"
#include "common/loop/socket_address.h"
#include "common/server/rate_table.h"

namespace kdns::server {

class WaitingBudget;

enum class ClientVerdict : uint8_t {
  kPass,     // within the limit (or exempt, or nothing applies)
  kLimited,  // over the client's rate: send nothing
  kSlip,     // over the client's rate, but answer with TC (header and question only)
  kShed,     // shed under overload: send nothing
};

// Why the server is shedding.
enum class Overload : uint8_t {
  kNone,
  kReceiveBacklog,  // the UDP receive queue is backing up or overflowing
  kWaitingQueries,  // the waiting-query budget is nearly full
};

struct ClientLimitOptions {
  uint32_t rate = 0;   // responses per second per client; 0: no rate limit
  uint32_t burst = 0;  // responses at once; 0: the same as `rate`
  uint8_t prefix_v4 = 32;
  uint8_t prefix_v6 = 64;
  uint32_t slip = 2;  // every slip-th limited query gets TC; 0: never
  std::vector<IpPrefix> exempt;
  bool shed = true;
  // The process's waiting-query budget: nearly full is overload. Optional.
  std::shared_ptr<const WaitingBudget> waiting;
  size_t slots = size_t{1} << 15;  // clients tracked at once (2 MiB)
};

class ClientLimiter {
 public:
  static constexpr uint64_t kTickNs = 100'000'000;
  // No cap: not shedding.
  static constexpr uint32_t kNotShedding = UINT32_MAX;
  // The waiting-query budget is "nearly full" from this share (percent) on.
  static constexpr size_t kWaitingOverloadPercent = 90;
  // The heaviest clients are logged at most this often, when any was limited or shed.
  static constexpr uint64_t kLogIntervalNs = 10'000'000'000;
  static constexpr size_t kLoggedOffenders = 5;
  static constexpr uint64_t kMedianAgeNs = 20'000'000;

  explicit ClientLimiter(const ClientLimitOptions& options);
  ClientLimiter(const ClientLimiter&) = delete;
  ClientLimiter& operator=(const ClientLimiter&) = delete;

  // Whether Check can return anything but kPass.
  bool enabled() const { return limiting() || shedding_enabled_; }
  bool limiting() const { return emission_ns_ != 0; }

  // Counts one query from `client` at `now_ns` (a steady clock in nanoseconds).
  ClientVerdict Check(const loop::SocketAddress& client, uint64_t now_ns);

  // A serving thread's report, about every kTickNs: `seen` is what it sees of its own
  // socket (kReceiveBacklog or kNone). The first caller of each tick decides the cap.
  void Tick(uint64_t now_ns, Overload seen);

  // Whether `client` is not among the heaviest: exempt, unknown, or at most twice the
  // median client's recent rate (with fewer than two clients, every client is light).
  // WaitingBudget keeps its last slots for these. The median is looked at again when the
  // last look is over kMedianAgeNs old: the budget can fill between two ticks.
  bool IsLight(const loop::SocketAddress& client, uint64_t now_ns);

  // The cap on a client's arrivals per window while shedding, else kNotShedding.
  uint32_t shed_cap() const { return shed_cap_.load(std::memory_order_relaxed); }
  // Why the cap was last lowered.
  Overload shed_reason() const { return shed_reason_.load(std::memory_order_relaxed); }

  struct TopClient {
    IpPrefix client;
    double queries_per_second = 0;  // recent arrivals
    uint32_t limited = 0;           // rate-limited queries since it was tracked
    bool shed = false;              // over the shedding cap now
  };
  // Up to `count` clients with the highest recent rate, highest first.
  std::vector<TopClient> Top(size_t count, uint64_t now_ns) const;

  size_t tracked() const { return table_.tracked(); }
  size_t capacity() const { return table_.capacity(); }
  size_t memory_bytes() const { return table_.memory_bytes(); }
  uint64_t slipped() const { return slipped_.load(std::memory_order_relaxed); }
  const ClientLimitOptions& options() const { return options_; }

 private:
  bool Exempt(const loop::SocketAddress& client) const;
  struct Key {
    uint64_t tag = 0;
    uint64_t high = 0;  // the prefix's address bits (IPv4: the low 32)
    uint64_t low = 0;
    uint32_t meta = 0;  // family and prefix length
  };
  Key KeyOf(const loop::SocketAddress& client) const;
  // The client's slot (its key written when it is new).
  RateTable::Slot& SlotOf(const loop::SocketAddress& client, uint64_t now_ns);
  // Reads every client's recent rate into scratch_, highest first, and the median into
  // median_. Under scan_mutex_.
  void ScanRates(uint64_t now_ns);
  // The cap that cuts the admitted load by a quarter (see the header comment), from the
  // rates ScanRates read. Under scan_mutex_.
  uint32_t LowerCap(uint32_t cap) const;
  // Quiet for a second: raises the cap by half (see the header comment).
  void RaiseCap(uint32_t cap, uint64_t now_ns);
  // Logs the heaviest clients, rate-limited (kLogIntervalNs).
  void LogOffenders(uint64_t now_ns);

  const ClientLimitOptions options_;
  const uint64_t emission_ns_;   // 1 s / rate; 0 when off
  const uint64_t tolerance_ns_;  // (burst - 1) emission intervals
  const bool shedding_enabled_;
  RateTable table_;
  std::atomic<uint64_t> slipped_{0};

  std::atomic<uint32_t> shed_cap_{kNotShedding};
  std::atomic<Overload> shed_reason_{Overload::kNone};
  std::atomic<uint8_t> backlog_seen_{0};
  std::atomic<uint64_t> next_tick_ns_{0};
  std::atomic<uint64_t> last_overload_ns_{0};
  std::atomic<uint64_t> next_log_ns_{0};
  std::atomic<uint64_t> hits_at_last_log_{0};
  std::mutex scan_mutex_;  // guards scratch_
  std::vector<uint32_t> scratch_;
  std::atomic<uint32_t> median_{0};        // arrivals per window; 0: not known
  std::atomic<uint64_t> median_at_ns_{0};  // when ScanRates last set it
};

}  // namespace kdns::server

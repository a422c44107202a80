// QueryLog: one line per answered query, for the operator asking "why does this pod's DNS
// fail" (dnsmasq's --log-queries, CoreDNS's log plugin), written once here and used by
// frontend-cache (--log-queries) and kubedns (--log-queries):
//
//   query client=10.1.2.3#41000 name=www.example.com. type=A rcode=NOERROR source=cache
//         duration_us=84
//
// and with Detail::kExtra (dnsmasq's --log-queries=extra) also the query ID, the transport
// and the reply's size: `id=4711 transport=udp bytes=76`. `source` says where the answer
// came from: cache, upstream, stale (an expired entry served, RFC 8767) or local (this
// server's own data: static answers, hosts files, the cluster records, refusals).
//
// A flood must not fill the disk: at most `max_lines_per_second` lines are written in any
// one second of the clock; the lines over it are counted (suppressed()) and, when the next
// line is written, summed in one line ("query log: N lines suppressed ..."). Sampling
// (`sample_one_in` > 1) logs one query in N, chosen at random per query, before the rate
// limit; a sampled-out query costs one random number.
//
// Thread: any; the handlers of every serving thread share one QueryLog. The rate limit's
// window is guarded by a mutex taken only for queries that are sampled in, so a query that
// is not logged takes no lock. Lines go to the Sink (by default glog's INFO log, which the
// programs send to stderr); the sink is called outside the mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "common/base/clock.h"
#include "common/base/query_log_detail.h"
#include "common/dns/transport.h"
#include "common/dns/types.h"
#include "common/loop/socket_address.h"

namespace kdns::dns {
class Name;
struct Query;
}  // namespace kdns::dns

namespace kdns::server {

// Where an answer came from: a fresh cache entry; an upstream's answer; an expired entry
// served because every upstream failed (RFC 8767); made here (records, CHAOS, local domains,
// refusals, FORMERR); a SERVFAIL made here because no upstream answered in time or a
// forwarding budget was spent. The query log's `source=` and frontend-cache's `source` label.
enum class AnswerSource : uint8_t { kCache, kUpstream, kStale, kLocal, kFailure };
inline constexpr size_t kAnswerSources = 5;
const char* AnswerSourceName(AnswerSource source);

// When a handler was given a query, and whether the query log samples it: every answer is
// timed (answer-time metrics, the log's duration) and logged from it, on whichever thread
// answers it and however late.
struct AnswerStart {
  using Clock = std::chrono::steady_clock;
  Clock::time_point at;
  bool logged = false;

  double ElapsedSeconds() const { return std::chrono::duration<double>(Clock::now() - at).count(); }
  uint64_t ElapsedMicros() const {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - at).count());
  }
};

struct QueryLogOptions {
  using Detail = QueryLogDetail;
  Detail detail = Detail::kOff;
  // Lines per second of the clock, at most; 0: no limit.
  uint32_t max_lines_per_second = 100;
  // Log one query in this many (1: every query).
  uint32_t sample_one_in = 1;
};

// What one line says. `reply_bytes` and `id` are written with Detail::kExtra only.
struct QueryLogEntry {
  const loop::SocketAddress& client;
  const dns::Name& qname;
  dns::RrType qtype;
  dns::Rcode rcode;
  AnswerSource source;
  uint64_t duration_us;
  uint16_t id = 0;
  dns::Transport transport = dns::Transport::kUdp;
  size_t reply_bytes = 0;
};

class QueryLog {
 public:
  using Sink = std::function<void(std::string_view line)>;

  // The default sink: LOG(INFO).
  static Sink GlogSink();

  QueryLog(const QueryLogOptions& options, const Clock& clock, Sink sink);
  QueryLog(const QueryLog&) = delete;
  QueryLog& operator=(const QueryLog&) = delete;

  bool enabled() const { return detail() != QueryLogOptions::Detail::kOff; }
  QueryLogOptions::Detail detail() const { return detail_.load(std::memory_order_relaxed); }
  // Turns logging on, off or to extra while the servers run (the kube-dns ConfigMap's
  // kdns.logQueries, common/config/runtime_switches.h): a query sampled before the change
  // is still logged; any thread.
  void SetDetail(QueryLogOptions::Detail detail) {
    detail_.store(detail, std::memory_order_relaxed);
  }
  // Whether to log this query (sampling). Call once per query, only when enabled(); the
  // caller then gathers the entry and calls Log.
  bool Sample();
  // Writes the line, or counts it as suppressed when the second's lines are spent.
  void Log(const QueryLogEntry& entry);
  // Now, sampled (a null log samples nothing): a query's start, taken once when its
  // handler is given it.
  static AnswerStart Start(QueryLog* log) {
    return AnswerStart{AnswerStart::Clock::now(), log != nullptr && log->Sample()};
  }
  // Log for the answer `response` (its rcode and size) to `query` from `client`, sent
  // `duration_us` after the query came.
  void LogAnswer(const loop::SocketAddress& client, const dns::Query& query,
                 std::span<const uint8_t> response, AnswerSource source, dns::Transport transport,
                 uint64_t duration_us);
  // The same for an answer sent now, when `start` was sampled: both servers' one way to
  // log an answer.
  void LogAnswer(const loop::SocketAddress& client, const dns::Query& query,
                 std::span<const uint8_t> response, AnswerSource source, dns::Transport transport,
                 const AnswerStart& start) {
    if (start.logged) LogAnswer(client, query, response, source, transport, start.ElapsedMicros());
  }

  // The line Log writes for `entry` (no rate limit; for tests and for Log).
  std::string Format(const QueryLogEntry& entry) const;

  uint64_t written() const { return written_.load(std::memory_order_relaxed); }
  uint64_t suppressed() const { return suppressed_total_.load(std::memory_order_relaxed); }

 private:
  const QueryLogOptions options_;  // its detail is only the initial detail_
  std::atomic<QueryLogOptions::Detail> detail_;
  const Clock& clock_;
  const Sink sink_;
  std::mutex mu_;
  uint64_t window_second_ = 0;          // Guarded by mu_.
  uint32_t window_lines_ = 0;           // Guarded by mu_.
  uint64_t suppressed_unreported_ = 0;  // Guarded by mu_: suppressed since the last report.
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> suppressed_total_{0};
};

}  // namespace kdns::server

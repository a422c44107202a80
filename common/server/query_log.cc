#include "common/server/query_log.h"

#include <glog/logging.h>

#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "common/dns/header.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"

namespace kdns::server {

namespace {

// A cheap per-thread generator for sampling: not for anything an attacker must not guess
// (a client cannot steer which of its queries are logged beyond the rate it sends).
uint32_t NextRandom() {
  thread_local std::minstd_rand generator(static_cast<uint32_t>(
      std::hash<std::thread::id>()(std::this_thread::get_id()) ^
      static_cast<size_t>(std::chrono::steady_clock::now().time_since_epoch().count())));
  return static_cast<uint32_t>(generator());
}

}  // namespace

const char* AnswerSourceName(AnswerSource source) {
  switch (source) {
    case AnswerSource::kCache:
      return "cache";
    case AnswerSource::kUpstream:
      return "upstream";
    case AnswerSource::kStale:
      return "stale";
    case AnswerSource::kLocal:
      return "local";
    case AnswerSource::kFailure:
      return "failure";
  }
  return "unknown";
}

QueryLog::Sink QueryLog::GlogSink() {
  return [](std::string_view line) { LOG(INFO) << line; };
}

QueryLog::QueryLog(const QueryLogOptions& options, const Clock& clock, Sink sink)
    : options_(options), detail_(options.detail), clock_(clock), sink_(std::move(sink)) {}

bool QueryLog::Sample() {
  if (!enabled()) return false;
  return options_.sample_one_in <= 1 || NextRandom() % options_.sample_one_in == 0;
}

std::string QueryLog::Format(const QueryLogEntry& entry) const {
  std::string line = "query client=";
  // dnsmasq's address#port, so an IPv6 client's port is not confused with the address.
  line += entry.client.HostString();
  line += '#';
  line += std::to_string(entry.client.port());
  line += " name=";
  line += entry.qname.ToText();
  line += " type=";
  line += dns::RrTypeToText(entry.qtype);
  line += " rcode=";
  line += dns::RcodeToText(entry.rcode);
  line += " source=";
  line += AnswerSourceName(entry.source);
  line += " duration_us=";
  line += std::to_string(entry.duration_us);
  if (detail() == QueryLogOptions::Detail::kExtra) {
    line += " id=";
    line += std::to_string(entry.id);
    line += " transport=";
    line += dns::TransportName(entry.transport);
    line += " bytes=";
    line += std::to_string(entry.reply_bytes);
  }
  return line;
}

void QueryLog::LogAnswer(const loop::SocketAddress& client, const dns::Query& query,
                         std::span<const uint8_t> response, AnswerSource source,
                         dns::Transport transport, uint64_t duration_us) {
  Log(QueryLogEntry{client, query.qname, query.qtype, dns::RcodeOf(response), source, duration_us,
                    query.header.id, transport, response.size()});
}

void QueryLog::Log(const QueryLogEntry& entry) {
  uint64_t report = 0;
  {
    std::lock_guard lock(mu_);
    const uint64_t second = clock_.NowMs() / 1000;
    if (second != window_second_) {
      window_second_ = second;
      window_lines_ = 0;
    }
    // The report of suppressed lines takes one of the second's lines too (unless the limit
    // is a single line, which could then never be written again).
    const uint32_t needed =
        suppressed_unreported_ > 0 && options_.max_lines_per_second >= 2 ? 2 : 1;
    if (options_.max_lines_per_second != 0 &&
        window_lines_ + needed > options_.max_lines_per_second) {
      ++suppressed_unreported_;
      suppressed_total_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    window_lines_ += needed;
    report = suppressed_unreported_;
    suppressed_unreported_ = 0;
  }
  if (report > 0) {
    sink_("query log: " + std::to_string(report) + " lines suppressed (over " +
          std::to_string(options_.max_lines_per_second) + " lines a second)");
  }
  sink_(Format(entry));
  written_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace kdns::server

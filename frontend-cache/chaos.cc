#include "frontend-cache/chaos.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/base/version.h"
#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/dns/rdata.h"
#include "common/upstream/upstream_address.h"

namespace kdns::frontend {
namespace {

using dns::Name;
using dns::RrClass;
using dns::RrType;

bool Is(const Name& qname, std::string_view text) { return qname == *Name::FromText(text); }

// The TXT strings for `qname`, or nullopt when it is not one of the statistics names.
std::optional<std::vector<std::string>> StatStrings(const Name& qname, const ChaosStats& stats) {
  if (Is(qname, "cachesize.bind.")) return std::vector{std::to_string(stats.cache_size)};
  if (Is(qname, "insertions.bind.")) return std::vector{std::to_string(stats.insertions)};
  if (Is(qname, "evictions.bind.")) return std::vector{std::to_string(stats.evictions)};
  if (Is(qname, "misses.bind.")) return std::vector{std::to_string(stats.misses)};
  if (Is(qname, "hits.bind.")) return std::vector{std::to_string(stats.hits)};
  if (Is(qname, "version.bind.")) return std::vector{std::string("kdns-") + kVersion};
  if (Is(qname, "servers.bind.")) {
    // One string per distinct address, counters summed, first-seen order (cache_make_stat).
    std::vector<UpstreamCounters> servers;
    for (const UpstreamCounters& server : stats.servers) {
      auto it = std::find_if(servers.begin(), servers.end(), [&](const UpstreamCounters& s) {
        return s.address == server.address;
      });
      if (it == servers.end()) {
        servers.push_back(server);
      } else {
        it->sent += server.sent;
        it->failed += server.failed;
      }
    }
    std::vector<std::string> strings;
    strings.reserve(servers.size());
    for (const UpstreamCounters& server : servers) {
      strings.push_back(upstream::FormatUpstreamAddress(server.address) + " " +
                        std::to_string(server.sent) + " " + std::to_string(server.failed));
    }
    if (strings.empty()) strings.emplace_back();
    return strings;
  }
  return std::nullopt;
}

}  // namespace

size_t AnswerChaos(const dns::Query& query, const ChaosStats& stats, std::span<uint8_t> out,
                   size_t max_size_bytes) {
  if (query.qclass != RrClass::kCh) return 0;
  dns::MessageBuilder builder(out, max_size_bytes);
  if (builder.StartResponse(query) != dns::BuildError::kOk) return 0;
  builder.header().ra = true;
  if (query.edns) {
    dns::EdnsView edns;
    edns.dnssec_ok = query.edns->dnssec_ok;
    if (builder.SetEdns(edns) != dns::BuildError::kOk) return 0;
  }
  std::optional<std::vector<std::string>> strings;
  if (query.qtype == RrType::kTxt || query.qtype == RrType::kAny) {
    strings = StatStrings(query.qname, stats);
  }
  if (!strings) {
    builder.header().rcode = dns::Rcode::kNotImp;
  } else {
    builder.header().aa = true;
    dns::ResourceRecord record{query.qname, RrType::kTxt, RrClass::kCh, 0,
                               dns::RdataTxt{std::move(*strings)}};
    // Too many upstreams for a UDP reply: TC is set and the client retries over TCP.
    (void)builder.AddRecord(dns::Section::kAnswer, record);
  }
  return builder.Finish().size();
}

}  // namespace kdns::frontend

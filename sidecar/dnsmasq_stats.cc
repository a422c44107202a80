#include "sidecar/dnsmasq_stats.h"

#include <algorithm>
#include <charconv>
#include <variant>

#include "common/dns/message.h"
#include "common/dns/rdata.h"
#include "sidecar/go_format.h"

namespace kdns::sidecar {

std::string_view DnsmasqStatQueryName(DnsmasqStat stat) {
  switch (stat) {
    case DnsmasqStat::kHits:
      return "hits.bind.";
    case DnsmasqStat::kMisses:
      return "misses.bind.";
    case DnsmasqStat::kEvictions:
      return "evictions.bind.";
    case DnsmasqStat::kInsertions:
      return "insertions.bind.";
    case DnsmasqStat::kCacheSize:
      return "cachesize.bind.";
  }
  return "";
}

bool ParseStatReply(std::span<const uint8_t> reply, DnsmasqStat stat, uint64_t* value,
                    std::string* error) {
  const std::string name(DnsmasqStatQueryName(stat));
  dns::Message message;
  const dns::ParseError parsed = dns::ParseMessage(reply, &message, dns::TrailingData::kIgnore);
  if (parsed != dns::ParseError::kOk) {
    *error = "malformed reply for " + name + ": " + std::string(dns::ToString(parsed));
    return false;
  }
  if (message.answers.size() != 1) {
    *error = "invalid number of Answer records for " + name + ": " +
             std::to_string(message.answers.size()) + " (rcode " +
             dns::RcodeToText(message.rcode()) + ")";
    return false;
  }
  const auto* txt = std::get_if<dns::RdataTxt>(&message.answers[0].rdata);
  if (message.answers[0].type != dns::RrType::kTxt || txt == nullptr) {
    *error = "missing TXT record for " + name;
    return false;
  }
  if (txt->strings.size() != 1) {
    *error =
        "invalid number of TXT records for " + name + ": " + std::to_string(txt->strings.size());
    return false;
  }
  const std::string& text = txt->strings[0];
  // Go's strconv.ParseInt(s, 10, 64) takes a sign; a negative count is nonsense here.
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  uint64_t number = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
      number > static_cast<uint64_t>(INT64_MAX)) {
    *error = "strconv.ParseInt: parsing " + GoQuote(text) + ": invalid syntax (for " + name + ")";
    return false;
  }
  *value = number;
  return true;
}

bool CounterMirror::Observe(const DnsmasqValues& values) {
  bool restarted = false;
  if (observed_) {
    for (DnsmasqStat stat : kAllDnsmasqStats) {
      const size_t i = static_cast<size_t>(stat);
      if (stat != DnsmasqStat::kCacheSize && values[i] < last_[i]) restarted = true;
    }
  }
  if (restarted) {
    ++restarts_;
    for (DnsmasqStat stat : kAllDnsmasqStats) {
      const size_t i = static_cast<size_t>(stat);
      if (stat != DnsmasqStat::kCacheSize) base_[i] += last_[i];
    }
  }
  last_ = values;
  observed_ = true;
  max_cache_size_ = std::max(max_cache_size_, values[static_cast<size_t>(DnsmasqStat::kCacheSize)]);
  return restarted;
}

uint64_t CounterMirror::Exported(DnsmasqStat stat) const {
  if (stat == DnsmasqStat::kCacheSize) return max_cache_size_;
  const size_t i = static_cast<size_t>(stat);
  return base_[i] + last_[i];
}

}  // namespace kdns::sidecar

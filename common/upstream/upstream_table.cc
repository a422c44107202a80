#include "common/upstream/upstream_table.h"

#include <glog/logging.h>
#include <netinet/in.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <span>

#include "common/limits/limits.h"
#include "common/upstream/upstream_set.h"

namespace kdns::upstream {

namespace {

const dns::Name& LoopProbeSuffix() {
  static const dns::Name suffix = *dns::Name::FromText(kLoopProbeSuffix);
  return suffix;
}

// The IP address of a socket address; an IPv4-mapped IPv6 address (a v4 peer of a
// dual-stack socket) as the IPv4 address it is.
std::optional<IpAddress> HostOf(const loop::SocketAddress& address) {
  if (address.is_v4()) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address.sockaddr_ptr());
    return IpAddress::FromBytes(
        std::span(reinterpret_cast<const uint8_t*>(&v4->sin_addr), sizeof(v4->sin_addr)));
  }
  if (address.is_v6()) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address.sockaddr_ptr());
    const auto* bytes = reinterpret_cast<const uint8_t*>(&v6->sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) return IpAddress::FromBytes(std::span(bytes + 12, 4));
    return IpAddress::FromBytes(std::span(bytes, sizeof(v6->sin6_addr)));
  }
  return std::nullopt;
}

bool IsLoopback(const IpAddress& ip) {
  const auto bytes = ip.bytes();
  if (ip.is_v4()) return bytes[0] == 127;
  return std::all_of(bytes.begin(), bytes.end() - 1, [](uint8_t b) { return b == 0; }) &&
         bytes.back() == 1;
}

}  // namespace

UpstreamTable::Entry::Entry(const Upstream& a, bool count_replies)
    : address(a),
      rtt_seconds(metrics::ExponentialBuckets(0.00025, 2, 16)),
      replies(count_replies ? std::make_unique<ReplyCounters>() : nullptr) {}

size_t UpstreamTable::ReplyRcodeIndex(dns::Rcode rcode) {
  for (size_t i = 0; i < kReplyRcodes.size(); ++i) {
    if (kReplyRcodes[i] == rcode) return i;
  }
  return kReplyRcodes.size();
}

std::string UpstreamTable::ReplyRcodeName(size_t index) {
  return index < kReplyRcodes.size() ? dns::RcodeToText(kReplyRcodes[index]) : "other";
}

UpstreamTable::UpstreamTable(std::vector<IpAddress> host_addresses, const Clock& clock)
    : host_addresses_(std::move(host_addresses)), clock_(clock) {}

UpstreamTable::Entry& UpstreamTable::Get(const Upstream& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_address_.find(address);
  if (it != by_address_.end()) return *it->second;
  entries_.push_back(std::make_unique<Entry>(address, count_replies_.load()));
  Entry* entry = entries_.back().get();
  by_address_.emplace(address, entry);
  return *entry;
}

std::vector<const UpstreamTable::Entry*> UpstreamTable::Entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Entry*> out;
  out.reserve(entries_.size());
  for (const auto& entry : entries_) out.push_back(entry.get());
  return out;
}

std::string UpstreamTable::ServersBindText(const Entry& entry) {
  return FormatUpstreamAddress(entry.address) + " " + std::to_string(entry.sent.Value()) + " " +
         std::to_string(entry.failed.Value());
}

dns::Name UpstreamTable::NewLoopProbe(const Upstream& upstream, SecureRandom& random) {
  char label[17];
  std::snprintf(label, sizeof(label), "%016" PRIx64, random.Next64());
  dns::Name name = LoopProbeSuffix();
  // A 16-octet label always fits in front of the short suffix.
  CHECK(name.PrependLabel(label));
  const uint64_t now_ms = clock_.NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  ForgetExpiredLoopProbes(now_ms);
  probes_.push_back(LoopProbe{name, upstream, now_ms + kLoopProbeLifetimeMs});
  if (probes_.size() > kMaxLoopProbes) probes_.pop_front();
  return name;
}

bool UpstreamTable::IsLoopProbeName(const dns::Name& qname) {
  return qname.label_count() == LoopProbeSuffix().label_count() + 1 &&
         qname.IsSubdomainOf(LoopProbeSuffix());
}

void UpstreamTable::ForgetExpiredLoopProbes(uint64_t now_ms) {
  while (!probes_.empty() && probes_.front().expires_ms <= now_ms) probes_.pop_front();
}

bool UpstreamTable::FromUpstreamSide(const loop::SocketAddress& upstream,
                                     const loop::SocketAddress& from) const {
  const std::optional<IpAddress> upstream_ip = HostOf(upstream);
  const std::optional<IpAddress> from_ip = HostOf(from);
  if (!upstream_ip || !from_ip) return false;
  if (*upstream_ip == *from_ip) return true;
  // An upstream on this host (a loopback address or one of the host's) sends from whichever
  // of the host's addresses routes to us; any other host's addresses are unknown to us.
  auto is_host_address = [&](const IpAddress& ip) {
    return std::find(host_addresses_.begin(), host_addresses_.end(), ip) != host_addresses_.end();
  };
  const bool upstream_here = IsLoopback(*upstream_ip) || is_host_address(*upstream_ip);
  return upstream_here && is_host_address(*from_ip);
}

std::optional<Upstream> UpstreamTable::MatchLoopProbe(const dns::Name& qname,
                                                      const loop::SocketAddress& from) {
  if (!IsLoopProbeName(qname)) return std::nullopt;
  std::optional<Upstream> sent_to;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ForgetExpiredLoopProbes(clock_.NowMs());
    auto it = std::find_if(probes_.begin(), probes_.end(),
                           [&](const LoopProbe& probe) { return probe.name == qname; });
    if (it != probes_.end()) {
      sent_to = it->upstream;
      if (FromUpstreamSide(it->upstream.address, from)) {
        probes_.erase(it);  // single use
        return sent_to;
      }
    }
  }
  limits::RecordLimitHit(
      limits::Limit::kLoopProbeRejected,
      qname.ToText() + " from " + from.ToString() +
          (sent_to ? ": sent to " + FormatUpstreamAddress(*sent_to) + ", not from its side"
                   : ": not an outstanding probe (unknown, expired or used)"));
  return std::nullopt;
}

bool UpstreamTable::Disable(const Upstream& upstream, std::string_view reason) {
  Entry& entry = Get(upstream);
  if (entry.loop_disabled.exchange(true, std::memory_order_relaxed)) return false;
  LOG(WARNING) << "upstream " << FormatUpstreamAddress(upstream) << " disabled: " << reason;
  return true;
}

bool UpstreamTable::IsDisabled(const Upstream& upstream) {
  return Get(upstream).loop_disabled.load(std::memory_order_relaxed);
}

void UpstreamTable::ClearLoopDisabled() {
  std::lock_guard lock(mu_);
  for (auto& entry : entries_) entry->loop_disabled.store(false, std::memory_order_relaxed);
}

namespace {

// One counter of every entry, labelled by upstream.
class PerUpstream final : public metrics::Collector {
 public:
  using Field = metrics::Counter UpstreamTable::Entry::*;
  PerUpstream(std::shared_ptr<const UpstreamTable> table, Field field)
      : table_(std::move(table)), field_(field) {}
  void Collect(std::vector<metrics::Sample>& out) const override {
    for (const UpstreamTable::Entry* entry : table_->Entries()) {
      out.push_back(
          {{FormatUpstreamAddress(entry->address)}, static_cast<double>((entry->*field_).Value())});
    }
  }

 private:
  std::shared_ptr<const UpstreamTable> table_;
  Field field_;
};

// The replies' counters by upstream and rcode.
class Replies final : public metrics::Collector {
 public:
  explicit Replies(std::shared_ptr<const UpstreamTable> table) : table_(std::move(table)) {}
  void Collect(std::vector<metrics::Sample>& out) const override {
    for (const UpstreamTable::Entry* entry : table_->Entries()) {
      if (entry->replies == nullptr) continue;
      const std::string upstream = FormatUpstreamAddress(entry->address);
      for (size_t i = 0; i < entry->replies->size(); ++i) {
        out.push_back({{upstream, UpstreamTable::ReplyRcodeName(i)},
                       static_cast<double>((*entry->replies)[i].Value())});
      }
    }
  }

 private:
  std::shared_ptr<const UpstreamTable> table_;
};

}  // namespace

void RegisterUpstreamMetrics(metrics::Registry& registry, const std::string& prefix,
                             std::shared_ptr<const UpstreamTable> table) {
  using Entry = UpstreamTable::Entry;
  const struct {
    const char* suffix;
    const char* help;
    PerUpstream::Field field;
  } counters[] = {
      {"_queries_total", "Queries sent to each upstream (every try, UDP or TCP).", &Entry::sent},
      {"_failures_total",
       "Tries to each upstream without a usable reply (timeouts, network errors, SERVFAIL, "
       "REFUSED, NOTIMP, FORMERR).",
       &Entry::failed},
      {"_timeouts_total", "Tries to each upstream that timed out.", &Entry::timeouts},
      {"_answers_total", "Replies from each upstream used for answers.", &Entry::answers},
      {"_tls_handshake_failures_total",
       "TLS handshakes with each tls:// upstream that failed (untrusted certificate, wrong "
       "name); its queries fail, never sent in the clear.",
       &Entry::tls_handshake_failures},
      {"_tls_resumed_total",
       "Connections to each tls:// upstream that resumed a TLS session (no certificate "
       "exchange) instead of a full handshake.",
       &Entry::tls_resumed},
      {"_health_check_failures_total", "Health probes to each failed upstream that got no reply.",
       &Entry::health_check_failures},
      {"_marked_down_total",
       "Times each upstream was marked down: its route's max_fails health "
       "probes in a row got no reply (queries to it fail at once until one does).",
       &Entry::marked_down},
  };
  for (const auto& counter : counters) {
    registry.AddCollector(prefix + counter.suffix, counter.help, metrics::MetricType::kCounter,
                          {"upstream"}, std::make_shared<PerUpstream>(table, counter.field));
  }
  registry.AddHistogramCollector(
      prefix + "_rtt_seconds", "Round-trip time of each upstream's replies.", {"upstream"},
      [table](const metrics::Registry::HistogramVisitor& visit) {
        for (const Entry* entry : table->Entries()) {
          visit({FormatUpstreamAddress(entry->address)}, entry->rtt_seconds);
        }
      });
  if (table->counts_replies()) {
    registry.AddCollector(prefix + "_replies_total",
                          "Replies received from each upstream to client queries, by rcode.",
                          metrics::MetricType::kCounter, {"upstream", "rcode"},
                          std::make_shared<Replies>(std::move(table)));
  }
}

}  // namespace kdns::upstream

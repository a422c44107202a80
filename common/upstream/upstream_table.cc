#include "common/upstream/upstream_table.h"

#include <glog/logging.h>

#include <cinttypes>
#include <cstdio>

#include "common/upstream/upstream_set.h"

namespace kdns::upstream {

namespace {

const dns::Name& LoopProbeSuffix() {
  static const dns::Name suffix = *dns::Name::FromText(kLoopProbeSuffix);
  return suffix;
}

}  // namespace

UpstreamTable::Entry::Entry(const loop::SocketAddress& a)
    : address(a), rtt_seconds(metrics::ExponentialBuckets(0.00025, 2, 16)) {}

UpstreamTable::UpstreamTable() = default;

UpstreamTable::Entry& UpstreamTable::Get(const loop::SocketAddress& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_address_.find(address);
  if (it != by_address_.end()) return *it->second;
  entries_.push_back(std::make_unique<Entry>(address));
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

dns::Name UpstreamTable::NewLoopProbe(const loop::SocketAddress& upstream, SecureRandom& random) {
  char label[17];
  std::snprintf(label, sizeof(label), "%016" PRIx64, random.Next64());
  dns::Name name = LoopProbeSuffix();
  // A 16-octet label always fits in front of the short suffix.
  CHECK(name.PrependLabel(label));
  std::lock_guard<std::mutex> lock(mu_);
  probes_.emplace_back(name, upstream);
  if (probes_.size() > kMaxLoopProbes) probes_.pop_front();
  return name;
}

bool UpstreamTable::IsLoopProbeName(const dns::Name& qname) {
  return qname.label_count() == LoopProbeSuffix().label_count() + 1 &&
         qname.IsSubdomainOf(LoopProbeSuffix());
}

std::optional<loop::SocketAddress> UpstreamTable::MatchLoopProbe(const dns::Name& qname) const {
  if (!IsLoopProbeName(qname)) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, upstream] : probes_) {
    if (name == qname) return upstream;
  }
  return std::nullopt;
}

bool UpstreamTable::Disable(const loop::SocketAddress& upstream, std::string_view reason) {
  Entry& entry = Get(upstream);
  if (entry.loop_disabled.exchange(true, std::memory_order_relaxed)) return false;
  LOG(WARNING) << "upstream " << FormatUpstreamAddress(upstream) << " disabled: " << reason;
  return true;
}

bool UpstreamTable::IsDisabled(const loop::SocketAddress& upstream) {
  return Get(upstream).loop_disabled.load(std::memory_order_relaxed);
}

void UpstreamTable::ClearLoopDisabled() {
  std::lock_guard lock(mu_);
  for (auto& entry : entries_) entry->loop_disabled.store(false, std::memory_order_relaxed);
}

}  // namespace kdns::upstream

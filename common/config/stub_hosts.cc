#include "common/config/stub_hosts.h"

#include <algorithm>
#include <utility>

namespace kdns::config {

void StubHostAddresses::Retain(std::span<const dns::Name> names) {
  std::erase_if(known_, [&](const auto& entry) {
    return std::find(names.begin(), names.end(), entry.first) == names.end();
  });
}

HostUpdate StubHostAddresses::Record(const dns::Name& name, std::vector<IpAddress> addresses) {
  if (addresses.empty()) {
    return known_.contains(name) ? HostUpdate::kKeptLast : HostUpdate::kUnresolved;
  }
  // IPv4 first, as kube-dns's Go resolver returns them; the order within a family kept.
  std::stable_partition(addresses.begin(), addresses.end(),
                        [](const IpAddress& ip) { return ip.is_v4(); });
  auto [it, inserted] = known_.try_emplace(name, std::move(addresses));
  if (inserted) return HostUpdate::kLearnt;
  if (it->second == addresses) return HostUpdate::kSame;
  it->second = std::move(addresses);
  return HostUpdate::kChanged;
}

std::span<const IpAddress> StubHostAddresses::Find(const dns::Name& name) const {
  auto it = known_.find(name);
  if (it == known_.end()) return {};
  return it->second;
}

}  // namespace kdns::config

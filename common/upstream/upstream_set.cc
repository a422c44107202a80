#include "common/upstream/upstream_set.h"

#include <utility>

namespace kdns::upstream {

UpstreamSet::UpstreamSet(std::vector<Upstream> addresses) : addresses_(std::move(addresses)) {
  size_t hash = addresses_.size();
  for (const auto& address : addresses_) hash = hash * 1000003 ^ address.Hash();
  hash_ = hash;
}

UpstreamSet::UpstreamSet(std::vector<Upstream> addresses, const RouteOptions& options)
    : UpstreamSet(std::move(addresses)) {
  if (options.IsDefault()) return;
  if (options.transport == RouteTransport::kForceTcp) {
    for (Upstream& upstream : addresses_) {
      if (upstream.transport == UpstreamTransport::kUdp)
        upstream.transport = UpstreamTransport::kTcp;
    }
  }
  options_ = options;
  size_t hash = addresses_.size();
  for (const auto& address : addresses_) hash = hash * 1000003 ^ address.Hash();
  hash_ = hash * 1000003 ^ options_.Hash();
}

std::optional<UpstreamSet> UpstreamSet::Parse(std::string_view text) {
  std::vector<Upstream> addresses;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(", ", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    if (!item.empty()) {
      auto address = ParseUpstreamAddress(item, kDnsmasqSyntax);
      if (!address) return std::nullopt;
      addresses.push_back(*address);
    }
    start = end + 1;
  }
  return UpstreamSet(std::move(addresses));
}

std::string UpstreamSet::ToString() const {
  std::string out;
  for (const auto& address : addresses_) {
    if (!out.empty()) out += ",";
    out += FormatUpstreamAddress(address);
  }
  return out;
}

}  // namespace kdns::upstream

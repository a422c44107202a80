#include "common/upstream/upstream_set.h"

#include <charconv>
#include <utility>

namespace kdns::upstream {

std::optional<loop::SocketAddress> ParseUpstreamAddress(std::string_view text) {
  std::string_view host = text;
  uint16_t port = kDnsPort;
  if (size_t hash = text.find('#'); hash != std::string_view::npos) {
    host = text.substr(0, hash);
    std::string_view port_text = text.substr(hash + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
        value == 0 || value > 65535) {
      return std::nullopt;
    }
    port = static_cast<uint16_t>(value);
  }
  if (host.empty()) return std::nullopt;
  return loop::SocketAddress::FromHostPort(host, port);
}

std::string FormatUpstreamAddress(const loop::SocketAddress& address) {
  return address.HostString() + "#" + std::to_string(address.port());
}

UpstreamSet::UpstreamSet(std::vector<loop::SocketAddress> addresses)
    : addresses_(std::move(addresses)) {
  size_t hash = addresses_.size();
  for (const auto& address : addresses_) hash = hash * 1000003 ^ address.Hash();
  hash_ = hash;
}

std::optional<UpstreamSet> UpstreamSet::Parse(std::string_view text) {
  std::vector<loop::SocketAddress> addresses;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(", ", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    if (!item.empty()) {
      auto address = ParseUpstreamAddress(item);
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

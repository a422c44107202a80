#include "frontend-cache/upstream_address.h"

#include <charconv>

namespace kdns::frontend {

std::string UpstreamAddress::ToString() const {
  return address.ToString() + "#" + std::to_string(port);
}

std::optional<uint16_t> ParsePort(std::string_view text, bool allow_zero) {
  unsigned value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value > 65535) return std::nullopt;
  if (value == 0 && !allow_zero) return std::nullopt;
  return static_cast<uint16_t>(value);
}

std::optional<UpstreamAddress> ParseUpstreamAddress(std::string_view text, std::string* error) {
  std::string_view host = text;
  std::optional<std::string_view> port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) {
      *error = "missing ']' in \"" + std::string(text) + "\"";
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != '#' && rest.front() != ':') {
        *error = "expected '#port' after ']' in \"" + std::string(text) + "\"";
        return std::nullopt;
      }
      port_text = rest.substr(1);
    }
  } else if (size_t hash = text.find('#'); hash != std::string_view::npos) {
    host = text.substr(0, hash);
    port_text = text.substr(hash + 1);
  }
  if (host.find('@') != std::string_view::npos ||
      (port_text && port_text->find('@') != std::string_view::npos)) {
    *error = "source address or interface ('@') is not supported in \"" + std::string(text) + "\"";
    return std::nullopt;
  }
  std::optional<IpAddress> address = IpAddress::Parse(host);
  if (!address) {
    *error = "\"" + std::string(host) + "\" is not an IP address";
    return std::nullopt;
  }
  UpstreamAddress upstream{*address, kDnsPort};
  if (port_text) {
    std::optional<uint16_t> port = ParsePort(*port_text);
    if (!port) {
      *error = "bad port \"" + std::string(*port_text) + "\" in \"" + std::string(text) +
               "\" (1..65535)";
      return std::nullopt;
    }
    upstream.port = *port;
  }
  return upstream;
}

}  // namespace kdns::frontend

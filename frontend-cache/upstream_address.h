// An upstream DNS server's address as dnsmasq writes it: `ip#port` ("10.0.0.10#53",
// "fd00::1#5353"). We also read the bracketed IPv6 forms `[fd00::1]`, `[fd00::1]#53` and
// `[fd00::1]:53` (the kube-dns ConfigMap's notation). A plain value, no thread affinity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/ip_address.h"

namespace kdns::frontend {

inline constexpr uint16_t kDnsPort = 53;

struct UpstreamAddress {
  IpAddress address;
  uint16_t port = kDnsPort;

  // dnsmasq's form, as servers.bind shows it: "10.0.0.10#53", "fd00::1#53" (no brackets).
  std::string ToString() const;

  friend bool operator==(const UpstreamAddress&, const UpstreamAddress&) = default;
};

// Parses "ip", "ip#port", "[ipv6]", "[ipv6]#port" or "[ipv6]:port". Port 1..65535.
// On failure returns nullopt and sets `error` to a one-line reason.
std::optional<UpstreamAddress> ParseUpstreamAddress(std::string_view text, std::string* error);

// Parses a decimal port 1..65535 (0 when `allow_zero`).
std::optional<uint16_t> ParsePort(std::string_view text, bool allow_zero = false);

}  // namespace kdns::frontend

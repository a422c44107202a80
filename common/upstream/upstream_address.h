// The one parser of the notations the programs take for an upstream DNS server's address,
// and its one printed form. The address itself is a loop::SocketAddress everywhere (the
// configuration, the routes, the Forwarder's UpstreamSet and its table), so nothing
// converts it through text. The notations:
//
//   ip            10.0.0.10, fd00::10                  every caller (IPv6: see bare_ipv6)
//   ip#port       10.0.0.10#5353, fd00::10#5353        dnsmasq (--server, servers-file)
//   [ip]#port     [fd00::10]#5353                      dnsmasq
//   ipv4:port     10.0.0.10:5353                       kube-dns (ConfigMap, --nameservers, --probe)
//   [ip]:port     [fd00::10]:5353                      kube-dns and dnsmasq
//   [ip]          [fd00::10]                           dnsmasq, --probe
//   host name     dns.example                          stubDomains (resolved by the caller)
//
// Each caller names the notations it accepts (an AddressSyntax), so one program accepts
// and refuses exactly what the tool it replaces does, and words its own error messages
// from the parse result (which part failed, and the text of that part).
//
// Logs, metrics labels and `servers.bind` print the dnsmasq form `ip#port`
// (FormatUpstreamAddress). Values; no thread affinity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/ip_address.h"
#include "common/loop/socket_address.h"

namespace kdns::upstream {

inline constexpr uint16_t kDnsPort = 53;

// The notations a caller accepts, beyond a bare IPv4 address (always accepted).
struct AddressSyntax {
  bool bare_ipv6 = false;           // fd00::10 (no port)
  bool hash_port = false;           // ip#port and [ip]#port (dnsmasq)
  bool colon_port = false;          // ipv4:port (Go's net.SplitHostPort)
  bool bracket_colon_port = false;  // [ip]:port
  bool bare_brackets = false;       // [ip] (no port)
  // IPv6 zones (fe80::1%eth0): only where the address goes to a socket as is.
  bool ipv6_zones = false;
  // Accepts a whole entry (no port, no brackets) that is not an IP as a host name to
  // resolve when this returns true (e.g. config::IsDns1123Subdomain). nullptr: no names.
  bool (*is_host_name)(std::string_view text) = nullptr;
  uint16_t default_port = kDnsPort;
};

// dnsmasq's `--server` / `server=` address: ip, ip#port, [ip], [ip]#port, [ip]:port.
inline constexpr AddressSyntax kDnsmasqSyntax{
    .bare_ipv6 = true, .hash_port = true, .bracket_colon_port = true, .bare_brackets = true};
// kube-dns's nameserver (upstreamNameservers, --nameservers; stubDomains add host names):
// ip, ipv4:port, [ip]:port.
inline constexpr AddressSyntax kKubeDnsSyntax{
    .bare_ipv6 = true, .colon_port = true, .bracket_colon_port = true};

// What went wrong with the shape of the text (before the host and port are looked at).
enum class AddressShape : uint8_t {
  kOk,
  kMissingBracket,   // "[fd00::1" with no ']'
  kBadAfterBracket,  // "[fd00::1]x": not a port separator this syntax takes
  kUnbracketedIpv6,  // "fd00::1:53" where only ipv4:port takes a colon
};

struct ParsedAddress {
  AddressShape shape = AddressShape::kOk;
  std::string_view host;       // as written, without brackets
  std::string_view port_text;  // as written, after the separator; empty if none
  bool port_given = false;
  std::optional<uint16_t> port;  // the port (default_port if none given); nullopt if bad
  std::optional<IpAddress> ip;   // when host is an IP address (without a zone)
  bool zoned = false;            // host is an IPv6 address with a zone (ipv6_zones)
  bool host_name = false;        // the whole text is a host name (is_host_name)

  // An address or a host name, and a good port.
  bool ok() const { return shape == AddressShape::kOk && port && (ip || zoned || host_name); }
  // The address, when ok() and an IP without a zone.
  std::optional<loop::SocketAddress> upstream() const;
};

// Splits and checks `text` by `syntax`; never fails hard, see ParsedAddress.
ParsedAddress ParseAddress(std::string_view text, const AddressSyntax& syntax);

// The address, when `text` is one in `syntax` (an IP, not a host name). Callers that
// report why use ParseAddress.
std::optional<loop::SocketAddress> ParseUpstreamAddress(std::string_view text,
                                                        const AddressSyntax& syntax);

// The dnsmasq form, as `servers.bind` shows it: `10.0.0.10#53`, `fd00::1#53` (no brackets).
std::string FormatUpstreamAddress(const loop::SocketAddress& address);

}  // namespace kdns::upstream

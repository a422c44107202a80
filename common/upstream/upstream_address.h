// An upstream DNS server's identity (Upstream: its socket address and the transport it is
// asked over), the one parser of the notations the programs take for it, and its one
// printed form. An Upstream is the value everywhere (the configuration, the routes, the
// Forwarder's UpstreamSet and its table), so nothing converts it through text. The
// notations:
//
//   ip            10.0.0.10, fd00::10                  every caller (IPv6: see bare_ipv6)
//   ip#port       10.0.0.10#5353, fd00::10#5353        dnsmasq (--server, servers-file)
//   [ip]#port     [fd00::10]#5353                      dnsmasq
//   ipv4:port     10.0.0.10:5353                       kube-dns (ConfigMap, --nameservers, --probe)
//   [ip]:port     [fd00::10]:5353                      kube-dns and dnsmasq
//   [ip]          [fd00::10]                           dnsmasq, --probe
//   host name     dns.example                          stubDomains (resolved by the caller)
//
// Where a caller takes a transport (AddressSyntax::transport_scheme: frontend-cache's
// --server and servers file, kube-dns's --nameservers, upstreamNameservers and
// stubDomains), `tcp://` before any of the IP forms above names an upstream asked over TCP
// only, on persistent pipelined connections (RFC 7766): `tcp://10.96.0.10#53`,
// `tcp://10.0.0.1:53`, `tcp://[fd00::10]:53`. Without it, an upstream is asked over UDP,
// and over TCP for a truncated reply or a client that came over TCP.
//
// `tls://` names an upstream asked over DNS over TLS (RFC 7858) on the same persistent
// pipelined connections, port 853 unless given, with `@SERVER_NAME` after the address for
// the name its certificate must carry (and the SNI sent): `tls://1.1.1.1@one.one.one.one`,
// `tls://10.0.0.1:8853@dns.example`, `tls://[fd00::10]#853`. Without a name, the
// certificate must carry the IP address. CoreDNS writes it `forward . tls://IP` with
// `tls_servername NAME`.
//
// Each caller names the notations it accepts (an AddressSyntax), so one program accepts
// and refuses exactly what the tool it replaces does, and words its own error messages
// from the parse result (which part failed, and the text of that part).
//
// Logs, metrics labels and `servers.bind` print the dnsmasq form `ip#port`, after the
// scheme of a transport other than UDP: `tcp://ip#port` (FormatUpstreamAddress), and
// `tls://ip#port@name` with a server name. The same address over UDP, tcp:// and tls://
// (or with two server names) are distinct upstreams (two table entries, two labels).
// Values; no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/base/ip_address.h"
#include "common/loop/socket_address.h"

namespace kdns::upstream {

inline constexpr uint16_t kDnsPort = 53;

// How an upstream is asked. dns::Transport is how one message travels; this is what the
// configuration says about the server, and part of its identity.
enum class UpstreamTransport : uint8_t {
  kUdp,  // UDP; TCP for a truncated reply or a client that came over TCP (the default)
  kTcp,  // TCP only, persistent pipelined connections (RFC 7766): written `tcp://ADDRESS`
  kTls,  // TLS only (RFC 7858), connections as kTcp's: written `tls://ADDRESS[@NAME]`
};

inline constexpr uint16_t kDnsOverTlsPort = 853;

// The scheme written before an address for `transport` ("tcp://", "tls://"); empty for kUdp.
std::string_view TransportScheme(UpstreamTransport transport);

// One upstream server: where it is and how it is asked.
struct Upstream {
  Upstream() = default;
  // A plain address is an upstream asked the default way (UDP), as everywhere before the
  // transport joined the identity.
  Upstream(const loop::SocketAddress& a,  // NOLINT(google-explicit-constructor): see above
           UpstreamTransport t = UpstreamTransport::kUdp, std::string name = {})
      : address(a), transport(t), server_name(std::move(name)) {}

  size_t Hash() const {
    const size_t hash = address.Hash() * 31 + static_cast<size_t>(transport);
    return server_name.empty() ? hash : hash * 31 + std::hash<std::string>()(server_name);
  }
  friend bool operator==(const Upstream&, const Upstream&) = default;

  loop::SocketAddress address;
  UpstreamTransport transport = UpstreamTransport::kUdp;
  // kTls: the name the certificate must carry (and the SNI); empty: its IP address.
  std::string server_name;
};

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
  // `tcp://` or `tls://` before an IP form: an upstream asked over TCP or TLS only (not
  // with host names); after tls://, the default port is 853 and `@NAME` may follow.
  bool transport_scheme = false;
};

// dnsmasq's `--server` / `server=` address: ip, ip#port, [ip], [ip]#port, [ip]:port.
// With tcp:// (the transport is ours, dnsmasq has none).
inline constexpr AddressSyntax kDnsmasqSyntax{.bare_ipv6 = true,
                                              .hash_port = true,
                                              .bracket_colon_port = true,
                                              .bare_brackets = true,
                                              .transport_scheme = true};
// kube-dns's nameserver (upstreamNameservers, --nameservers; stubDomains add host names):
// ip, ipv4:port, [ip]:port; with tcp:// (ours).
inline constexpr AddressSyntax kKubeDnsSyntax{
    .bare_ipv6 = true, .colon_port = true, .bracket_colon_port = true, .transport_scheme = true};

// What went wrong with the shape of the text (before the host and port are looked at).
enum class AddressShape : uint8_t {
  kOk,
  kMissingBracket,   // "[fd00::1" with no ']'
  kBadAfterBracket,  // "[fd00::1]x": not a port separator this syntax takes
  kUnbracketedIpv6,  // "fd00::1:53" where only ipv4:port takes a colon
};

struct ParsedAddress {
  AddressShape shape = AddressShape::kOk;
  bool bad_server_name = false;  // tls://...@NAME with NAME not a host name
  UpstreamTransport transport = UpstreamTransport::kUdp;  // tcp://, tls:// (transport_scheme)
  std::string_view server_name;                           // tls://...@NAME: NAME; empty if none
  std::string_view host;                                  // as written, without brackets
  std::string_view port_text;  // as written, after the separator; empty if none
  bool port_given = false;
  std::optional<uint16_t> port;  // the port (default_port if none given); nullopt if bad
  std::optional<IpAddress> ip;   // when host is an IP address (without a zone)
  bool zoned = false;            // host is an IPv6 address with a zone (ipv6_zones)
  bool host_name = false;        // the whole text is a host name (is_host_name; never
                                 // after a scheme: names are resolved into plain addresses)

  // An address or a host name, and a good port.
  bool ok() const {
    return shape == AddressShape::kOk && !bad_server_name && port && (ip || zoned || host_name);
  }
  // The upstream, when ok() and an IP without a zone.
  std::optional<Upstream> upstream() const;
};

// Splits and checks `text` by `syntax`; never fails hard, see ParsedAddress.
ParsedAddress ParseAddress(std::string_view text, const AddressSyntax& syntax);

// The upstream, when `text` is one in `syntax` (an IP, not a host name). Callers that
// report why use ParseAddress.
std::optional<Upstream> ParseUpstreamAddress(std::string_view text, const AddressSyntax& syntax);

// The dnsmasq form, as `servers.bind` shows it: `10.0.0.10#53`, `fd00::1#53` (no brackets),
// `tcp://10.0.0.10#53`, `tls://10.0.0.10#853@dns.example`.
std::string FormatUpstreamAddress(const Upstream& upstream);

}  // namespace kdns::upstream

template <>
struct std::hash<kdns::upstream::Upstream> {
  size_t operator()(const kdns::upstream::Upstream& u) const { return u.Hash(); }
};

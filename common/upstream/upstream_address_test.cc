#include "common/upstream/upstream_address.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::upstream {
namespace {

// The syntax of the sidecar's --probe server (sidecar/probe_option.cc).
constexpr AddressSyntax kProbeSyntax{
    .colon_port = true, .bracket_colon_port = true, .bare_brackets = true, .ipv6_zones = true};

// A host-name test for the stub-domain syntax, in place of config::IsDns1123Subdomain
// (common/config sits above this module): lower-case letters, digits, '-' and '.'.
bool IsLowerCaseHostName(std::string_view text) {
  return !text.empty() &&
         text.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string_view::npos;
}

std::string Socket(std::string_view text, const AddressSyntax& syntax) {
  auto upstream = ParseUpstreamAddress(text, syntax);
  if (!upstream) return "<none>";
  return std::string(TransportScheme(upstream->transport)) + upstream->address.ToString();
}

TEST_CASE("Upstream addresses print as dnsmasq prints them", "[upstream][address]") {
  CHECK(FormatUpstreamAddress(*ParseUpstreamAddress("10.0.0.10", kDnsmasqSyntax)) ==
        "10.0.0.10#53");
  CHECK(FormatUpstreamAddress(*ParseUpstreamAddress("[FD00::1]:5353", kDnsmasqSyntax)) ==
        "fd00::1#5353");
  CHECK(FormatUpstreamAddress(*ParseUpstreamAddress("fd00::1#5353", kDnsmasqSyntax)) ==
        "fd00::1#5353");
}

TEST_CASE("dnsmasq's forms: ip, ip#port and the bracketed ones", "[upstream][address]") {
  CHECK(Socket("10.0.0.10", kDnsmasqSyntax) == "10.0.0.10:53");
  CHECK(Socket("10.0.0.10#5353", kDnsmasqSyntax) == "10.0.0.10:5353");
  CHECK(Socket("fd00::1#5353", kDnsmasqSyntax) == "[fd00::1]:5353");
  CHECK(Socket("fd00::1", kDnsmasqSyntax) == "[fd00::1]:53");
  CHECK(Socket("[fd00::1]", kDnsmasqSyntax) == "[fd00::1]:53");
  CHECK(Socket("[fd00::1]#54", kDnsmasqSyntax) == "[fd00::1]:54");
  CHECK(Socket("[fd00::1]:55", kDnsmasqSyntax) == "[fd00::1]:55");
  CHECK(Socket("[::1]:53", kDnsmasqSyntax) == "[::1]:53");
  for (const char* bad :
       {"", "#53", "10.0.0.10#", "10.0.0.10#0", "10.0.0.10#65536", "10.0.0.10#5x", "dns.example",
        "10.0.0.10:53", "[fd00::1", "[fd00::1]53", "1.2.3.4#53@eth0", "fe80::1%lo#53"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseUpstreamAddress(bad, kDnsmasqSyntax).has_value());
  }
  CHECK(ParseAddress("[fd00::1", kDnsmasqSyntax).shape == AddressShape::kMissingBracket);
  CHECK(ParseAddress("[fd00::1]53", kDnsmasqSyntax).shape == AddressShape::kBadAfterBracket);
  const ParsedAddress bad_port = ParseAddress("1.2.3.4#x", kDnsmasqSyntax);
  CHECK(bad_port.shape == AddressShape::kOk);
  CHECK(bad_port.port_text == "x");
  CHECK_FALSE(bad_port.port);
}

TEST_CASE("kube-dns's forms: ip, ipv4:port, [ip]:port; names only where asked",
          "[upstream][address]") {
  CHECK(Socket("10.0.0.10", kKubeDnsSyntax) == "10.0.0.10:53");
  CHECK(Socket("10.0.0.10:1", kKubeDnsSyntax) == "10.0.0.10:1");
  CHECK(Socket("[10.0.0.10]:54", kKubeDnsSyntax) == "10.0.0.10:54");
  CHECK(ParseUpstreamAddress("::1:53", kKubeDnsSyntax)->address.is_v6());  // IPv6, port 53
  CHECK(ParseUpstreamAddress("::1:53", kKubeDnsSyntax)->address.port() == 53);
  CHECK(Socket("[::1]:5353", kKubeDnsSyntax) == "[::1]:5353");
  for (const char* bad : {"", ":53", "10.0.0.10:", "10.0.0.10:+53", "[::1]", "::1]:53", "host:53",
                          "10.0.0.256", "010.0.0.1", "10.0.0.10#53", "[::1]#53", "dns.example"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseUpstreamAddress(bad, kKubeDnsSyntax).has_value());
  }
  CHECK(ParseAddress("::1]:53", kKubeDnsSyntax).shape == AddressShape::kUnbracketedIpv6);

  AddressSyntax stub = kKubeDnsSyntax;
  stub.is_host_name = IsLowerCaseHostName;
  const ParsedAddress name = ParseAddress("dns.example", stub);
  CHECK(name.ok());
  CHECK(name.host_name);
  CHECK_FALSE(name.upstream());
  CHECK(ParseAddress("10.0.0.256", stub).host_name);  // not an IP: a DNS-1123 name
  CHECK_FALSE(ParseAddress("dns.example:53", stub).ok());
  CHECK_FALSE(ParseAddress("DNS.example", stub).ok());
  CHECK(ParseAddress("10.0.0.10", stub).upstream());
}

TEST_CASE("tcp:// before any IP form names an upstream asked over TCP only",
          "[upstream][address]") {
  CHECK(Socket("tcp://10.96.0.10#53", kDnsmasqSyntax) == "tcp://10.96.0.10:53");
  CHECK(Socket("tcp://10.96.0.10", kDnsmasqSyntax) == "tcp://10.96.0.10:53");
  CHECK(Socket("tcp://[fd00::10]#5353", kDnsmasqSyntax) == "tcp://[fd00::10]:5353");
  CHECK(Socket("tcp://fd00::10", kDnsmasqSyntax) == "tcp://[fd00::10]:53");
  CHECK(Socket("tcp://10.0.0.1:53", kKubeDnsSyntax) == "tcp://10.0.0.1:53");
  CHECK(Socket("tcp://[fd00::10]:53", kKubeDnsSyntax) == "tcp://[fd00::10]:53");
  CHECK(Socket("10.0.0.1:53", kKubeDnsSyntax) == "10.0.0.1:53");
  CHECK(ParseAddress("tcp://10.0.0.1:53", kKubeDnsSyntax).transport == UpstreamTransport::kTcp);
  CHECK(ParseAddress("10.0.0.1:53", kKubeDnsSyntax).transport == UpstreamTransport::kUdp);
  for (const char* bad : {"tcp://", "tcp:/10.0.0.1", "TCP://10.0.0.1", "udp://10.0.0.1",
                          "tcp://tcp://10.0.0.1", " tcp://10.0.0.1"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseUpstreamAddress(bad, kDnsmasqSyntax).has_value());
    CHECK_FALSE(ParseUpstreamAddress(bad, kKubeDnsSyntax).has_value());
  }
  // Only where the caller takes a transport (not the sidecar's --probe).
  CHECK_FALSE(ParseUpstreamAddress("tcp://127.0.0.1", kProbeSyntax).has_value());
  // A host name is resolved by the caller into plain addresses: no scheme.
  AddressSyntax stub = kKubeDnsSyntax;
  stub.is_host_name = IsLowerCaseHostName;
  const ParsedAddress name = ParseAddress("tcp://dns.example", stub);
  CHECK_FALSE(name.host_name);
  CHECK_FALSE(name.ok());
  CHECK(ParseUpstreamAddress("tcp://10.0.0.10", stub).has_value());
}

TEST_CASE("The same address over UDP and over tcp:// are two upstreams", "[upstream][address]") {
  const Upstream udp = *ParseUpstreamAddress("10.0.0.1#53", kDnsmasqSyntax);
  const Upstream tcp = *ParseUpstreamAddress("tcp://10.0.0.1#53", kDnsmasqSyntax);
  CHECK(udp.address == tcp.address);
  CHECK_FALSE(udp == tcp);
  CHECK(udp.Hash() != tcp.Hash());
  CHECK(FormatUpstreamAddress(udp) == "10.0.0.1#53");
  CHECK(FormatUpstreamAddress(tcp) == "tcp://10.0.0.1#53");
  CHECK(FormatUpstreamAddress(*ParseUpstreamAddress("tcp://[FD00::1]:53", kKubeDnsSyntax)) ==
        "tcp://fd00::1#53");
  // A plain socket address is the UDP upstream.
  CHECK(Upstream(udp.address) == udp);
}

TEST_CASE("tls:// names a DNS-over-TLS upstream, port 853 by default, with an optional name",
          "[upstream][address]") {
  CHECK(Socket("tls://10.0.0.1", kDnsmasqSyntax) == "tls://10.0.0.1:853");
  CHECK(Socket("tls://10.0.0.1#8853", kDnsmasqSyntax) == "tls://10.0.0.1:8853");
  CHECK(Socket("tls://10.0.0.1:8853", kKubeDnsSyntax) == "tls://10.0.0.1:8853");
  CHECK(Socket("tls://[fd00::10]:853", kKubeDnsSyntax) == "tls://[fd00::10]:853");
  CHECK(Socket("tls://fd00::10", kKubeDnsSyntax) == "tls://[fd00::10]:853");
  const Upstream named = *ParseUpstreamAddress("tls://1.1.1.1@one.one.one.one", kKubeDnsSyntax);
  CHECK(named.transport == UpstreamTransport::kTls);
  CHECK(named.server_name == "one.one.one.one");
  CHECK(named.address.port() == 853);
  CHECK(FormatUpstreamAddress(named) == "tls://1.1.1.1#853@one.one.one.one");
  const Upstream ported = *ParseUpstreamAddress("tls://[fd00::1]#8853@Dns.Example", kDnsmasqSyntax);
  CHECK(ported.server_name == "Dns.Example");
  CHECK(FormatUpstreamAddress(ported) == "tls://fd00::1#8853@Dns.Example");
  // Without a name, the certificate must carry the IP: no name in the identity.
  CHECK(ParseUpstreamAddress("tls://10.0.0.1", kDnsmasqSyntax)->server_name.empty());
  for (const char* bad : {"tls://", "tls://10.0.0.1@", "tls://10.0.0.1@bad_name",
                          "tls://10.0.0.1@a..b", "tls://@dns.example", "10.0.0.1@dns.example",
                          "tcp://10.0.0.1@dns.example", "TLS://10.0.0.1"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseUpstreamAddress(bad, kDnsmasqSyntax).has_value());
    CHECK_FALSE(ParseAddress(bad, kKubeDnsSyntax).ok());
  }
  CHECK(ParseAddress("tls://10.0.0.1@a_b", kKubeDnsSyntax).bad_server_name);
  // Only where the caller takes a transport; never a host name to resolve.
  CHECK_FALSE(ParseUpstreamAddress("tls://127.0.0.1", kProbeSyntax).has_value());
  AddressSyntax stub = kKubeDnsSyntax;
  stub.is_host_name = IsLowerCaseHostName;
  CHECK_FALSE(ParseAddress("tls://dns.example", stub).ok());
}

TEST_CASE("Two server names or two transports on one address are distinct upstreams",
          "[upstream][address]") {
  const Upstream a = *ParseUpstreamAddress("tls://10.0.0.1@a.example", kDnsmasqSyntax);
  const Upstream b = *ParseUpstreamAddress("tls://10.0.0.1@b.example", kDnsmasqSyntax);
  const Upstream tcp = *ParseUpstreamAddress("tcp://10.0.0.1#853", kDnsmasqSyntax);
  CHECK_FALSE(a == b);
  CHECK(a.Hash() != b.Hash());
  CHECK_FALSE(Upstream(a.address, UpstreamTransport::kTls) == a);
  CHECK_FALSE(tcp == Upstream(a.address, UpstreamTransport::kTls));
}

TEST_CASE("The probe server's forms: host:port, [ip]:port, [ip], bare IPv4",
          "[upstream][address]") {
  CHECK(Socket("127.0.0.1", kProbeSyntax) == "127.0.0.1:53");
  CHECK(Socket("127.0.0.1:10053", kProbeSyntax) == "127.0.0.1:10053");
  CHECK(Socket("[2001:db8::1]", kProbeSyntax) == "[2001:db8::1]:53");
  CHECK(ParseAddress("::1", kProbeSyntax).shape == AddressShape::kUnbracketedIpv6);
  const ParsedAddress zoned = ParseAddress("[fe80::1%1]:53", kProbeSyntax);
  CHECK(zoned.ok());
  CHECK(zoned.zoned);
  CHECK(zoned.host == "fe80::1%1");
  CHECK_FALSE(ParseAddress("[fe80::1%1]:53", kKubeDnsSyntax).ok());
  CHECK_FALSE(ParseAddress("1.2.3.4%1", kProbeSyntax).ok());
}

}  // namespace
}  // namespace kdns::upstream

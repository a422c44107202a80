#include "common/upstream/upstream_address.h"

#include <charconv>

#include "common/base/port.h"

namespace kdns::upstream {

namespace {
constexpr std::string_view kTcpScheme = "tcp://";
constexpr std::string_view kTlsScheme = "tls://";

// A TLS server name: a host name (RFC 1123 §2.1 letters, digits and hyphens, dot-separated
// labels of 1 to 63 characters).
bool IsServerName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool allowed =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!allowed || ++label > 63) return false;
  }
  return true;
}
}  // namespace

std::string_view TransportScheme(UpstreamTransport transport) {
  switch (transport) {
    case UpstreamTransport::kUdp:
      return "";
    case UpstreamTransport::kTcp:
      return kTcpScheme;
    case UpstreamTransport::kTls:
      return kTlsScheme;
  }
  return "";
}

std::optional<Upstream> ParsedAddress::upstream() const {
  if (!ok() || !ip) return std::nullopt;
  return Upstream(loop::SocketAddressOf(*ip, *port), transport, std::string(server_name));
}

ParsedAddress ParseAddress(std::string_view text, const AddressSyntax& syntax) {
  ParsedAddress parsed;
  if (syntax.transport_scheme && text.starts_with(kTcpScheme)) {
    parsed.transport = UpstreamTransport::kTcp;
    text.remove_prefix(kTcpScheme.size());
  } else if (syntax.transport_scheme && text.starts_with(kTlsScheme)) {
    parsed.transport = UpstreamTransport::kTls;
    text.remove_prefix(kTlsScheme.size());
    if (const size_t at = text.rfind('@'); at != std::string_view::npos) {
      parsed.server_name = text.substr(at + 1);
      parsed.bad_server_name = !IsServerName(parsed.server_name);
      text = text.substr(0, at);
    }
  }
  parsed.host = text;
  bool bracketed = false;
  if (std::optional<IpAddress> bare = IpAddress::Parse(text);
      bare && (bare->is_v4() || syntax.bare_ipv6)) {
    // A bare address first: an IPv6 address holds colons that are not a port separator.
  } else if (!text.empty() && text.front() == '[') {
    bracketed = true;
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      parsed.shape = AddressShape::kMissingBracket;
      return parsed;
    }
    parsed.host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty()) {
      if (!syntax.bare_brackets) parsed.shape = AddressShape::kBadAfterBracket;
    } else if ((rest.front() == '#' && syntax.hash_port) ||
               (rest.front() == ':' && syntax.bracket_colon_port)) {
      parsed.port_given = true;
      parsed.port_text = rest.substr(1);
    } else {
      parsed.shape = AddressShape::kBadAfterBracket;
    }
    if (parsed.shape != AddressShape::kOk) return parsed;
  } else if (const size_t hash = syntax.hash_port ? text.find('#') : std::string_view::npos;
             hash != std::string_view::npos) {
    parsed.host = text.substr(0, hash);
    parsed.port_given = true;
    parsed.port_text = text.substr(hash + 1);
  } else if (const size_t colon = syntax.colon_port ? text.rfind(':') : std::string_view::npos;
             colon != std::string_view::npos) {
    parsed.host = text.substr(0, colon);
    parsed.port_given = true;
    parsed.port_text = text.substr(colon + 1);
    if (parsed.host.find(':') != std::string_view::npos) {
      parsed.shape = AddressShape::kUnbracketedIpv6;
      return parsed;
    }
  }
  const uint16_t default_port =
      parsed.transport == UpstreamTransport::kTls ? kDnsOverTlsPort : syntax.default_port;
  parsed.port = parsed.port_given ? ParsePort(parsed.port_text) : default_port;
  parsed.ip = IpAddress::Parse(parsed.host);
  if (!parsed.ip && syntax.ipv6_zones && parsed.host.find('%') != std::string_view::npos) {
    parsed.zoned = loop::SocketAddress::FromHostPort(parsed.host, kDnsPort).has_value();
  }
  // A host name is resolved by the caller into plain addresses: a scheme would be lost.
  parsed.host_name = !parsed.ip && !parsed.zoned && !bracketed && !parsed.port_given &&
                     parsed.transport == UpstreamTransport::kUdp &&
                     syntax.is_host_name != nullptr && syntax.is_host_name(text);
  return parsed;
}

std::optional<Upstream> ParseUpstreamAddress(std::string_view text, const AddressSyntax& syntax) {
  return ParseAddress(text, syntax).upstream();
}

std::string FormatUpstreamAddress(const Upstream& upstream) {
  std::string text(TransportScheme(upstream.transport));
  text += upstream.address.HostString();
  text += '#';
  text += std::to_string(upstream.address.port());
  if (!upstream.server_name.empty()) {
    text += '@';
    text += upstream.server_name;
  }
  return text;
}

}  // namespace kdns::upstream

#include "sidecar/probe_option.h"

#include <charconv>
#include <optional>
#include <vector>

#include "common/dns/errors.h"
#include "common/upstream/upstream_address.h"
#include "sidecar/go_format.h"

namespace kdns::sidecar {
namespace {

constexpr std::string_view kLabelPattern = "^[a-zA-Z0-9_]+$";

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text = text.substr(at + 1);
  }
}

bool IsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Go's strconv.Atoi: an optional sign and decimal digits, within int64. Returns Go's error
// text on failure.
std::optional<int64_t> GoAtoi(std::string_view text, std::string* error) {
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  const auto fail = [&](std::string_view why) {
    *error = "strconv.Atoi: parsing " + GoQuote(text) + ": " + std::string(why);
    return std::nullopt;
  };
  if (digits.empty()) return fail("invalid syntax");
  uint64_t magnitude = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return fail("invalid syntax");
  }
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (ec != std::errc() || end != digits.data() + digits.size() || magnitude > limit) {
    return fail("value out of range");
  }
  if (negative)
    return magnitude == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(magnitude);
  return static_cast<int64_t>(magnitude);
}

// host:port, [v6]:port or [v6] (zones allowed: the address goes to a socket as is); a
// bare IPv4 address gets kube-dns's ":53".
constexpr upstream::AddressSyntax kProbeServerSyntax{
    .colon_port = true, .bracket_colon_port = true, .bare_brackets = true, .ipv6_zones = true};

bool ParseServer(std::string_view text, loop::SocketAddress* server, std::string* error) {
  const upstream::ParsedAddress parsed = upstream::ParseAddress(text, kProbeServerSyntax);
  switch (parsed.shape) {
    case upstream::AddressShape::kMissingBracket:
      *error = "missing ']' in the IPv6 address";
      return false;
    case upstream::AddressShape::kBadAfterBracket:
      *error = "expected ':port' after ']'";
      return false;
    case upstream::AddressShape::kUnbracketedIpv6:
      *error = "an IPv6 address must be in brackets, e.g. [::1]:53";
      return false;
    case upstream::AddressShape::kOk:
      break;
  }
  if (parsed.host.empty()) {
    *error = "missing host";
    return false;
  }
  if (!parsed.port) {
    *error = "port " + GoQuote(parsed.port_text) + " is not a number in 1..65535";
    return false;
  }
  std::optional<loop::SocketAddress> address =
      parsed.ok() ? loop::SocketAddress::FromHostPort(parsed.host, *parsed.port) : std::nullopt;
  if (!address) {
    *error = "host " + GoQuote(parsed.host) + " is not an IP address (names are not resolved)";
    return false;
  }
  *server = *address;
  return true;
}

}  // namespace

std::string_view ProbeTypeText(dns::RrType type) {
  switch (type) {
    case dns::RrType::kA:
      return "A";
    case dns::RrType::kAaaa:
      return "AAAA";
    case dns::RrType::kSrv:
      return "SRV";
    default:
      return "ANY";
  }
}

bool ParseProbeOption(std::string_view value, ProbeOption* option, std::string* error) {
  const std::vector<std::string_view> parts = Split(value, ',');
  const std::string context = "--probe=" + std::string(value) + ": ";
  if (parts.size() < 3 || parts.size() > 5) {
    *error = "invalid format to --probe: " + GoQuote(value) +
             " (want label,server,name[,interval_seconds][,type])";
    return false;
  }
  ProbeOption parsed;

  parsed.label = parts[0];
  bool label_ok = !parsed.label.empty();
  for (char c : parsed.label) label_ok = label_ok && IsLabelChar(c);
  if (!label_ok) {
    *error = context + "label must be of format " + std::string(kLabelPattern);
    return false;
  }

  std::string why;
  if (!ParseServer(parts[1], &parsed.server, &why)) {
    *error = context + "server " + GoQuote(parts[1]) + ": " + why;
    return false;
  }

  parsed.name_text = parts[2];
  if (parsed.name_text.empty() || parsed.name_text.back() != '.') parsed.name_text += '.';
  const dns::ParseError name_error = dns::Name::FromText(parsed.name_text, &parsed.name);
  if (name_error != dns::ParseError::kOk) {
    *error = context + "name " + GoQuote(parts[2]) + ": " + std::string(dns::ToString(name_error));
    return false;
  }

  if (parts.size() >= 4) {
    std::optional<int64_t> seconds = GoAtoi(parts[3], &why);
    if (!seconds) {
      *error = context + why;
      return false;
    }
    if (*seconds < 1 || static_cast<uint64_t>(*seconds) > kMaxProbeIntervalS) {
      *error = context + "interval " + std::to_string(*seconds) + " is not in 1.." +
               std::to_string(kMaxProbeIntervalS) + " seconds";
      return false;
    }
    parsed.interval_ms = static_cast<uint64_t>(*seconds) * 1000;
  }

  if (parts.size() >= 5) {
    const std::string_view type = parts[4];
    if (type == "A") {
      parsed.type = dns::RrType::kA;
    } else if (type == "AAAA") {
      parsed.type = dns::RrType::kAaaa;
    } else if (type == "ANY") {
      parsed.type = dns::RrType::kAny;
    } else if (type == "SRV") {
      parsed.type = dns::RrType::kSrv;
    } else {
      *error = context + "invalid type for DNS: " + std::string(type) + " (A, AAAA, ANY or SRV)";
      return false;
    }
  }
  *option = std::move(parsed);
  return true;
}

}  // namespace kdns::sidecar

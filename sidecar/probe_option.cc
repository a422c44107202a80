#include "sidecar/probe_option.h"

#include <charconv>
#include <optional>
#include <vector>

#include "common/dns/errors.h"
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

// host:port, [v6]:port or [v6]; kube-dns's ":53 when there is no ':'" already applied.
bool ParseServer(std::string_view text, loop::SocketAddress* server, std::string* error) {
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      *error = "missing ']' in the IPv6 address";
      return false;
    }
    host = text.substr(1, close - 1);
    std::string_view after = text.substr(close + 1);
    if (after.empty()) {
      port_text = "53";
    } else if (after.front() == ':') {
      port_text = after.substr(1);
    } else {
      *error = "expected ':port' after ']'";
      return false;
    }
  } else {
    const size_t colon = text.rfind(':');
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      *error = "an IPv6 address must be in brackets, e.g. [::1]:53";
      return false;
    }
  }
  if (host.empty()) {
    *error = "missing host";
    return false;
  }
  uint32_t port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port == 0 || port > 65535) {
    *error = "port " + GoQuote(port_text) + " is not a number in 1..65535";
    return false;
  }
  std::optional<loop::SocketAddress> address =
      loop::SocketAddress::FromHostPort(host, static_cast<uint16_t>(port));
  if (!address) {
    *error = "host " + GoQuote(host) + " is not an IP address (names are not resolved)";
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

  std::string server(parts[1]);
  if (server.find(':') == std::string::npos) server += ":53";
  std::string why;
  if (!ParseServer(server, &parsed.server, &why)) {
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

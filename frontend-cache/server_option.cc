// The --server and --address values and the --servers-file lines, in dnsmasq's syntax
// (server_option.h).
#include "frontend-cache/server_option.h"

#include <optional>

#include "common/base/next_line.h"
#include "common/base/trim.h"
#include "common/upstream/upstream_address.h"

namespace kdns::frontend {
namespace {

// The upstream of a --server value (kDnsmasqSyntax, tcp:// included), with the errors worded
// for --server.
std::optional<upstream::Upstream> ParseServerAddress(std::string_view text, std::string* error) {
  const upstream::ParsedAddress parsed = upstream::ParseAddress(text, upstream::kDnsmasqSyntax);
  const std::string quoted = "\"" + std::string(text) + "\"";
  switch (parsed.shape) {
    case upstream::AddressShape::kMissingBracket:
      *error = "missing ']' in " + quoted;
      return std::nullopt;
    case upstream::AddressShape::kBadAfterBracket:
    case upstream::AddressShape::kUnbracketedIpv6:
      *error = "expected '#port' after ']' in " + quoted;
      return std::nullopt;
    case upstream::AddressShape::kOk:
      break;
  }
  if (parsed.bad_server_name) {
    *error = "bad TLS server name \"" + std::string(parsed.server_name) + "\" in " + quoted;
    return std::nullopt;
  }
  if (parsed.host.find('@') != std::string_view::npos ||
      parsed.port_text.find('@') != std::string_view::npos) {
    *error = "source address or interface ('@') is not supported in " + quoted;
    return std::nullopt;
  }
  if (!parsed.ip) {
    *error = "\"" + std::string(parsed.host) + "\" is not an IP address";
    return std::nullopt;
  }
  if (!parsed.port) {
    *error = "bad port \"" + std::string(parsed.port_text) + "\" in " + quoted + " (1..65535)";
    return std::nullopt;
  }
  return parsed.upstream();
}

}  // namespace

bool ParseServerOption(std::string_view value, ServerOption* server, std::string* error) {
  *server = ServerOption();
  if (value.empty()) {
    *error = "empty value";
    return false;
  }
  std::string_view target = value;
  if (value.front() == '/') {
    // The domains end at the last '/' before the target, whose scheme (tcp://) has some.
    const size_t scheme = value.find("://");
    const size_t last = value.rfind('/', scheme == std::string_view::npos ? scheme : scheme - 1);
    if (last == 0) {
      *error = "missing '/' after the domain";
      return false;
    }
    std::string_view domains = value.substr(1, last - 1);
    target = value.substr(last + 1);
    while (true) {
      const size_t slash = domains.find('/');
      std::string_view domain = domains.substr(0, slash);
      if (domain.empty()) {
        *error = "empty domain (dnsmasq's // for unqualified names is not supported)";
        return false;
      }
      if (domain.find('*') != std::string_view::npos ||
          domain.find('#') != std::string_view::npos) {
        *error = "wildcard domain \"" + std::string(domain) + "\" is not supported";
        return false;
      }
      std::optional<dns::Name> name = dns::Name::FromText(domain);
      if (!name) {
        *error = "bad domain \"" + std::string(domain) + "\"";
        return false;
      }
      server->domains.push_back(name->Lowercased());
      if (slash == std::string_view::npos) break;
      domains = domains.substr(slash + 1);
    }
    if (target.empty()) {
      server->target = ServerOption::Target::kLocal;
      return true;
    }
    if (target == "#") {
      server->target = ServerOption::Target::kDefaultUpstreams;
      return true;
    }
  }
  std::optional<upstream::Upstream> upstream = ParseServerAddress(target, error);
  if (!upstream) return false;
  server->target = ServerOption::Target::kUpstream;
  server->upstream = *upstream;
  return true;
}

bool ParseAddressOption(std::string_view value, AddressOption* address, ServerOption* server,
                        bool* local, std::string* error) {
  *address = AddressOption();
  *local = false;
  if (value.empty() || value.front() != '/') {
    *error = "expected /domain/[address]";
    return false;
  }
  const size_t last = value.rfind('/');
  if (last == 0) {
    *error = "missing '/' after the domain";
    return false;
  }
  const std::string_view target = value.substr(last + 1);
  if (target.empty()) {
    // dnsmasq: "--address=/example.com/ is equivalent to --server=/example.com/".
    *local = true;
    return ParseServerOption(value, server, error);
  }
  std::string_view domains = value.substr(1, last - 1);
  while (true) {
    const size_t slash = domains.find('/');
    const std::string_view domain = domains.substr(0, slash);
    if (domain == "#") {
      address->domains.push_back(dns::Name::Root());  // dnsmasq: /#/ matches any domain
    } else {
      std::optional<dns::Name> name;
      if (!domain.empty() && domain.find('*') == std::string_view::npos) {
        name = dns::Name::FromText(domain);
      }
      if (!name) {
        *error = "bad domain \"" + std::string(domain) + "\"";
        return false;
      }
      address->domains.push_back(name->Lowercased());
    }
    if (slash == std::string_view::npos) break;
    domains = domains.substr(slash + 1);
  }
  if (target == "#") {
    // dnsmasq: "#" is both null addresses.
    address->addresses = {*IpAddress::Parse("0.0.0.0"), *IpAddress::Parse("::")};
    return true;
  }
  std::optional<IpAddress> ip = IpAddress::Parse(target);
  if (!ip) {
    *error = "\"" + std::string(target) + "\" is not an IP address";
    return false;
  }
  address->addresses = {*ip};
  return true;
}

bool ParseServersFile(std::string_view text, std::vector<ServerOption>* servers, std::string* error,
                      config::RuntimeSwitches* switches,
                      std::vector<upstream::RouteOptionsEntry>* route_options) {
  size_t number = 0;
  while (!text.empty()) {
    ++number;
    std::string_view line = NextLine(&text);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    auto bad = [&](const std::string& why) {
      *error = "line " + std::to_string(number) + ": " + std::string(line) + ": " + why;
      return false;
    };
    constexpr std::string_view kServer = "server=";
    constexpr std::string_view kLogQueries = "log-queries=";
    constexpr std::string_view kDebugData = "debug-data=";
    if (switches != nullptr && line.starts_with(kLogQueries)) {
      QueryLogDetail detail;
      if (!config::ParseLogQueriesSwitch(line.substr(kLogQueries.size()), &detail, error)) {
        return bad(*error);
      }
      switches->log_queries = detail;
      continue;
    }
    if (switches != nullptr && line.starts_with(kDebugData)) {
      bool on = false;
      if (!config::ParseDebugDataSwitch(line.substr(kDebugData.size()), &on, error)) {
        return bad(*error);
      }
      switches->debug_data = on;
      continue;
    }
    constexpr std::string_view kRouteOptions = "route-options=";
    if (route_options != nullptr && line.starts_with(kRouteOptions)) {
      upstream::RouteOptionsEntry entry;
      if (!upstream::ParseRouteOptionsEntry(line.substr(kRouteOptions.size()), &entry, error)) {
        return bad(*error);
      }
      route_options->push_back(std::move(entry));
      continue;
    }
    if (!line.starts_with(kServer)) {
      *error = "line " + std::to_string(number) + ": \"" + std::string(line) +
               "\": only server=... lines are allowed";
      return false;
    }
    ServerOption server;
    if (!ParseServerOption(line.substr(kServer.size()), &server, error)) return bad(*error);
    servers->push_back(std::move(server));
  }
  return true;
}

}  // namespace kdns::frontend

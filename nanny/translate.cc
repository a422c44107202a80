#include "nanny/translate.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

#include "common/upstream/upstream_address.h"

namespace kdns::nanny {
namespace {

bool ParseJson(const std::string& text, rapidjson::Document* doc) {
  doc->Parse(text.data(), text.size());
  return !doc->HasParseError();
}

bool StringList(const rapidjson::Value& value, std::vector<std::string>* out) {
  out->clear();
  if (value.IsNull()) return true;
  if (!value.IsArray()) return false;
  for (const auto& entry : value.GetArray()) {
    if (!entry.IsString()) return false;
    out->emplace_back(entry.GetString(), entry.GetStringLength());
  }
  return true;
}

// "/zone/<server>" for each zone, before every server already in *config.
void PrependZoneRoutes(const std::vector<std::string>& zones, const std::string& server,
                       ChildConfig* config) {
  std::vector<std::string> servers;
  servers.reserve(zones.size() + config->servers.size());
  for (const auto& zone : zones) {
    std::string route = "/";
    route += zone;
    route += "/";
    route += server;
    servers.push_back(std::move(route));
  }
  servers.insert(servers.end(), config->servers.begin(), config->servers.end());
  config->servers = std::move(servers);
}

}  // namespace

bool ExtractRawConfig(const config::ConfigDirData& data, RawConfig* raw, std::string* error) {
  RawConfig result;
  if (data.stub_domains) {
    rapidjson::Document doc;
    if (!ParseJson(*data.stub_domains, &doc) || !(doc.IsObject() || doc.IsNull())) {
      *error = "stubDomains: not a JSON object";
      return false;
    }
    if (doc.IsObject()) {
      std::map<std::string, std::vector<std::string>> domains;  // repeated key: last wins
      for (const auto& member : doc.GetObject()) {
        std::vector<std::string> servers;
        if (!StringList(member.value, &servers)) {
          *error = "stubDomains: not a list of nameservers";
          return false;
        }
        domains[std::string(member.name.GetString(), member.name.GetStringLength())] =
            std::move(servers);
      }
      result.stub_domains.assign(domains.begin(), domains.end());
    }
  }
  if (data.upstream_nameservers) {
    rapidjson::Document doc;
    if (!ParseJson(*data.upstream_nameservers, &doc) ||
        !StringList(doc, &result.upstream_nameservers)) {
      *error = "upstreamNameservers: not a JSON list of strings";
      return false;
    }
  }
  if (!config::ParseRuntimeSwitches(data.log_queries, data.debug_data, &result.switches, error)) {
    return false;
  }
  if (data.route_options) {
    rapidjson::Document doc;
    if (!ParseJson(*data.route_options, &doc) || !(doc.IsObject() || doc.IsNull())) {
      *error = std::string(config::kRouteOptionsKey) + ": not a JSON object";
      return false;
    }
    std::map<std::string, std::string> entries;  // by route; "." (the default) first
    if (doc.IsObject()) {
      for (const auto& member : doc.GetObject()) {
        if (!member.value.IsString()) {
          *error = std::string(config::kRouteOptionsKey) + ": not an object of strings";
          return false;
        }
        const std::string route(member.name.GetString(), member.name.GetStringLength());
        const std::string options(member.value.GetString(), member.value.GetStringLength());
        // --route-options' entry: the default route has no domain part.
        std::string entry = route == "." ? std::string() : "/" + route + "/";
        entry += options;
        entries[route] = std::move(entry);
      }
    }
    for (auto& [route, entry] : entries) result.route_options.push_back(std::move(entry));
  }
  *raw = std::move(result);
  return true;
}

std::string ConfigVersion(const config::ConfigDirData& data) {
  uint64_t hash = 14695981039346656037ULL;
  auto add = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) {
      hash ^= c;
      hash *= 1099511628211ULL;
    }
  };
  for (const auto& [key, value] :
       {std::pair{config::kStubDomainsKey, &data.stub_domains},
        std::pair{config::kUpstreamNameserversKey, &data.upstream_nameservers},
        std::pair{config::kLogQueriesKey, &data.log_queries},
        std::pair{config::kDebugDataKey, &data.debug_data},
        std::pair{config::kRouteOptionsKey, &data.route_options}}) {
    if (!value->has_value()) continue;
    add(key);
    add(std::string_view("\0", 1));
    add(**value);
    add(std::string_view("\0", 1));
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string MungeAddress(std::string_view address) {
  std::string s(address);
  const upstream::ParsedAddress parsed = upstream::ParseAddress(address, upstream::kKubeDnsSyntax);
  // The separator just before the port (a view into `address`; before tls://'s @NAME)
  // becomes dnsmasq's '#'.
  if (parsed.shape == upstream::AddressShape::kOk && parsed.port_given) {
    s[static_cast<size_t>(parsed.port_text.data() - address.data()) - 1] = '#';
  }
  return s;
}

bool IsHostName(std::string_view server) {
  return !upstream::ParseUpstreamAddress(server, upstream::kKubeDnsSyntax).has_value();
}

std::vector<std::string> HostNames(const RawConfig& raw) {
  std::vector<std::string> names;
  for (const auto& [domain, servers] : raw.stub_domains) {
    for (const auto& server : servers) {
      if (IsHostName(server)) names.push_back(server);
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

ChildConfig Translate(const RawConfig& raw, const HostAddresses& hosts) {
  ChildConfig out;
  for (const auto& [domain, servers] : raw.stub_domains) {
    size_t added = 0;
    for (const auto& server : servers) {
      std::string address = server;
      if (IsHostName(server)) {
        auto known = hosts.find(server);
        if (known == hosts.end()) {
          out.unresolved.push_back(server);
          continue;
        }
        address = known->second.ToString();
      }
      out.servers.push_back("/" + domain + "/" + MungeAddress(address));
      ++added;
    }
    if (added == 0 && !servers.empty()) out.servers.push_back("/" + domain + "/");
  }
  for (const auto& server : raw.upstream_nameservers) out.servers.push_back(MungeAddress(server));
  out.no_resolv = !raw.upstream_nameservers.empty();
  out.switches = raw.switches;
  out.route_options = raw.route_options;
  std::sort(out.unresolved.begin(), out.unresolved.end());
  out.unresolved.erase(std::unique(out.unresolved.begin(), out.unresolved.end()),
                       out.unresolved.end());
  return out;
}

void AddKubednsZones(const std::vector<std::string>& zones, std::string_view kubedns_server,
                     ChildConfig* config) {
  PrependZoneRoutes(zones, MungeAddress(kubedns_server), config);
}

std::vector<std::string> ClusterZones(std::string_view cluster_domain,
                                      const std::vector<std::string>& kubedns_zones) {
  std::string domain(cluster_domain);
  while (!domain.empty() && domain.back() == '.') domain.pop_back();
  std::transform(domain.begin(), domain.end(), domain.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::vector<std::string> zones = {domain, "in-addr.arpa", "ip6.arpa"};
  for (const std::string& zone : kubedns_zones) {
    if (std::find(zones.begin(), zones.end(), zone) == zones.end()) zones.push_back(zone);
  }
  return zones;
}

void AddClusterZones(const std::vector<std::string>& zones, const IpAddress& cluster_ip,
                     ChildConfig* config) {
  // "tcp://10.96.0.10#53", "tcp://[fd00::10]#53": over TCP only, on persistent pipelined
  // connections (common/upstream, "tcp://"), as node-cache's force_tcp but without a
  // connection per query.
  const std::string server =
      "tcp://" + MungeAddress(cluster_ip.is_v6() ? "[" + cluster_ip.ToString() + "]:53"
                                                 : cluster_ip.ToString() + ":53");
  PrependZoneRoutes(zones, server, config);
}

std::vector<std::string> ToArguments(const ChildConfig& config) {
  std::vector<std::string> args;
  for (const auto& server : config.servers) args.push_back("--server=" + server);
  if (config.no_resolv) args.push_back("--no-resolv");
  return args;
}

std::string ToServersFile(const ChildConfig& config, std::string_view version) {
  std::string text = "# Written by the nanny from the kube-dns ConfigMap, version ";
  text += version;
  text += ".\n";
  for (const auto& server : config.servers) text += "server=" + server + "\n";
  // The runtime switches (common/config/runtime_switches.h), ours, in the ConfigMap's words.
  if (config.switches.log_queries) {
    text +=
        "log-queries=" + std::string(config::LogQueriesSwitchValue(*config.switches.log_queries)) +
        "\n";
  }
  if (config.switches.debug_data) {
    text += std::string("debug-data=") + (*config.switches.debug_data ? "true" : "false") + "\n";
  }
  for (const auto& entry : config.route_options) text += "route-options=" + entry + "\n";
  return text;
}

}  // namespace kdns::nanny

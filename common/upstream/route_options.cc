#include "common/upstream/route_options.h"

#include <charconv>
#include <utility>

#include "common/base/duration.h"

namespace kdns::upstream {

namespace {

constexpr std::pair<std::string_view, RoutePolicy> kPolicies[] = {
    {"random", RoutePolicy::kRandom},
    {"round_robin", RoutePolicy::kRoundRobin},
    {"sequential", RoutePolicy::kSequential},
};

std::string_view PolicyName(RoutePolicy policy) {
  for (const auto& [name, value] : kPolicies) {
    if (value == policy) return name;
  }
  return "";
}

std::string FormatMs(uint64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// One `name` or `name=value` option into `options`.
bool ParseOne(std::string_view option, RouteOptions* options, std::string* error) {
  const size_t equals = option.find('=');
  const std::string_view name = option.substr(0, equals);
  const std::string_view value =
      equals == std::string_view::npos ? std::string_view() : option.substr(equals + 1);
  const bool has_value = equals != std::string_view::npos;
  auto bad = [&](std::string_view why) {
    *error = "route option \"" + std::string(option) + "\": " + std::string(why);
    return false;
  };
  if (name == "force_tcp" || name == "prefer_udp") {
    if (has_value) return bad("takes no value");
    const RouteTransport transport =
        name == "force_tcp" ? RouteTransport::kForceTcp : RouteTransport::kPreferUdp;
    if (options->transport != RouteTransport::kDefault && options->transport != transport) {
      return bad("force_tcp and prefer_udp exclude each other");
    }
    options->transport = transport;
    return true;
  }
  if (name == "policy") {
    for (const auto& [policy_name, policy] : kPolicies) {
      if (value == policy_name) {
        options->policy = policy;
        return true;
      }
    }
    return bad("want random, round_robin or sequential");
  }
  if (name == "max_fails") {
    uint32_t fails = 0;
    const auto [end, status] = std::from_chars(value.data(), value.data() + value.size(), fails);
    if (value.empty() || status != std::errc() || end != value.data() + value.size()) {
      return bad("want a count (0: never down)");
    }
    options->max_fails = fails;
    return true;
  }
  if (name == "health_check") {
    const std::optional<uint64_t> ms = ParseDurationMs(value);
    if (!ms || *ms == 0) return bad("want a duration above zero (500ms, 1s)");
    options->health_check_ms = *ms;
    return true;
  }
  return bad("unknown (force_tcp, prefer_udp, policy, max_fails, health_check)");
}

}  // namespace

size_t RouteOptions::Hash() const {
  size_t hash = static_cast<size_t>(policy) * 4 + static_cast<size_t>(transport);
  hash = hash * 1000003 ^ (max_fails ? *max_fails + 1 : 0);
  hash = hash * 1000003 ^ (health_check_ms ? *health_check_ms + 1 : 0);
  return hash;
}

std::string RouteOptions::ToString() const {
  std::string out;
  auto add = [&out](std::string_view option) {
    if (!out.empty()) out += ",";
    out += option;
  };
  if (transport == RouteTransport::kForceTcp) add("force_tcp");
  if (transport == RouteTransport::kPreferUdp) add("prefer_udp");
  if (policy != RoutePolicy::kDefault) add("policy=" + std::string(PolicyName(policy)));
  if (max_fails) add("max_fails=" + std::to_string(*max_fails));
  if (health_check_ms) add("health_check=" + FormatMs(*health_check_ms));
  return out;
}

void RouteOptions::MergeFrom(const RouteOptions& other) {
  if (other.policy != RoutePolicy::kDefault) policy = other.policy;
  if (other.transport != RouteTransport::kDefault) transport = other.transport;
  if (other.max_fails) max_fails = other.max_fails;
  if (other.health_check_ms) health_check_ms = other.health_check_ms;
}

bool ParseRouteOptions(std::string_view text, RouteOptions* options, std::string* error) {
  RouteOptions result;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view option = text.substr(start, end - start);
    if (option.empty()) {
      *error = "route options \"" + std::string(text) + "\": empty option";
      return false;
    }
    if (!ParseOne(option, &result, error)) return false;
    start = end + 1;
  }
  *options = result;
  return true;
}

bool ParseRouteOptionsEntry(std::string_view text, RouteOptionsEntry* entry, std::string* error) {
  RouteOptionsEntry result;
  std::string_view rest = text;
  if (!rest.empty() && rest.front() == '/') {
    const size_t last = rest.rfind('/');
    std::string_view domains = rest.substr(1, last - 1);
    rest = rest.substr(last + 1);
    size_t start = 0;
    while (start <= domains.size()) {
      size_t end = domains.find('/', start);
      if (end == std::string_view::npos) end = domains.size();
      const std::string_view domain = domains.substr(start, end - start);
      std::optional<dns::Name> name = dns::Name::FromText(domain);
      if (domain.empty() || !name) {
        *error = "route options \"" + std::string(text) + "\": bad domain \"" +
                 std::string(domain) + "\"";
        return false;
      }
      result.domains.push_back(name->Lowercased());
      start = end + 1;
    }
  } else {
    result.default_route = true;
  }
  if (!ParseRouteOptions(rest, &result.options, error)) return false;
  *entry = std::move(result);
  return true;
}

bool ParseRouteOptionsList(std::string_view text, std::vector<RouteOptionsEntry>* entries,
                           std::string* error) {
  std::vector<RouteOptionsEntry> parsed;
  size_t start = 0;
  while (start < text.size()) {
    start = text.find_first_not_of(" \t\n", start);
    if (start == std::string_view::npos) break;
    size_t end = text.find_first_of(" \t\n", start);
    if (end == std::string_view::npos) end = text.size();
    RouteOptionsEntry entry;
    if (!ParseRouteOptionsEntry(text.substr(start, end - start), &entry, error)) return false;
    parsed.push_back(std::move(entry));
    start = end;
  }
  entries->insert(entries->end(), parsed.begin(), parsed.end());
  return true;
}

RouteOptions RouteOptionsFor(std::span<const RouteOptionsEntry> entries, const dns::Name& domain) {
  RouteOptions options;
  for (const RouteOptionsEntry& entry : entries) {
    bool names_it = entry.default_route && domain.IsRoot();
    for (const dns::Name& name : entry.domains) names_it = names_it || name == domain;
    if (names_it) options.MergeFrom(entry.options);
  }
  return options;
}

}  // namespace kdns::upstream

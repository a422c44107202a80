#include "sidecar/options.h"

#include <optional>
#include <set>

#include "common/metrics/text_format.h"
#include "sidecar/go_format.h"

namespace kdns::sidecar {
namespace {

bool Address(std::string_view flag, std::string_view host, int64_t port, int64_t min_port,
             loop::SocketAddress* address, std::string* error) {
  if (port < min_port || port > 65535) {
    *error = "--" + std::string(flag) + "-port: " + std::to_string(port) + " is not a port in " +
             std::to_string(min_port) + "..65535";
    return false;
  }
  std::optional<loop::SocketAddress> parsed = loop::SocketAddress::FromHostPort(
      host.empty() ? std::string_view("0.0.0.0") : host, static_cast<uint16_t>(port));
  if (!parsed) {
    *error = "--" + std::string(flag) + "-addr: " + GoQuote(host) +
             " is not an IP address (names are not resolved)";
    return false;
  }
  *address = *parsed;
  return true;
}

}  // namespace

bool ExtractProbeFlags(std::span<const std::string_view> args,
                       std::vector<std::string>* probe_values, std::vector<std::string>* rest,
                       std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--") {
      rest->insert(rest->end(), args.begin() + static_cast<ptrdiff_t>(i), args.end());
      return true;
    }
    std::string_view name = arg;
    if (name.starts_with("--")) {
      name.remove_prefix(2);
    } else if (name.starts_with("-")) {
      name.remove_prefix(1);
    } else {
      rest->emplace_back(arg);
      continue;
    }
    if (name == "probe") {
      if (i + 1 == args.size()) {
        *error = "--probe needs a value: label,server,name[,interval_seconds][,type]";
        return false;
      }
      probe_values->emplace_back(args[++i]);
    } else if (name.starts_with("probe=")) {
      probe_values->emplace_back(name.substr(6));
    } else {
      rest->emplace_back(arg);
    }
  }
  return true;
}

bool BuildOptions(const FlagValues& flags, std::span<const std::string> probe_values,
                  Options* options, std::string* error) {
  Options built;
  std::set<std::string> labels;
  for (const std::string& value : probe_values) {
    ProbeOption probe;
    if (!ParseProbeOption(value, &probe, error)) return false;
    if (!labels.insert(probe.label).second) {
      *error = "--probe=" + value + ": duplicate label " + GoQuote(probe.label) +
               " (each label names one /healthcheck/<label> and its metrics)";
      return false;
    }
    built.probes.push_back(std::move(probe));
  }
  if (!Address("dnsmasq", flags.dnsmasq_addr, flags.dnsmasq_port, 1, &built.dnsmasq, error)) {
    return false;
  }
  if (flags.dnsmasq_poll_interval_ms < static_cast<int64_t>(kMinPollIntervalMs)) {
    *error = "--dnsmasq-poll-interval-ms: " + std::to_string(flags.dnsmasq_poll_interval_ms) +
             " is below " + std::to_string(kMinPollIntervalMs);
    return false;
  }
  built.dnsmasq_poll_interval_ms = static_cast<uint64_t>(flags.dnsmasq_poll_interval_ms);
  if (!Address("prometheus", flags.prometheus_addr, flags.prometheus_port, 0, &built.prometheus,
               error)) {
    return false;
  }
  if (flags.prometheus_path.empty() || flags.prometheus_path.front() != '/' ||
      flags.prometheus_path.starts_with("/healthcheck/") || flags.prometheus_path == "/healthz") {
    *error = "--prometheus-path: " + GoQuote(flags.prometheus_path) +
             " must start with '/' and not be /healthz or under /healthcheck/";
    return false;
  }
  built.prometheus_path = flags.prometheus_path;
  // Empty is allowed: Go's BuildFQName then leaves the namespace out.
  if (!flags.prometheus_namespace.empty() &&
      !metrics::IsValidMetricName(flags.prometheus_namespace)) {
    *error = "--prometheus-namespace: " + GoQuote(flags.prometheus_namespace) +
             " is not usable in a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)";
    return false;
  }
  built.prometheus_namespace = flags.prometheus_namespace;
  *options = std::move(built);
  return true;
}

}  // namespace kdns::sidecar

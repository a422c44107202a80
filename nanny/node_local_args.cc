#include "nanny/node_local_args.h"

#include <algorithm>
#include <cctype>

#include "common/base/duration.h"
#include "common/loop/socket_address.h"
#include "nanny/args.h"

namespace kdns::nanny {
namespace {

bool ParseAddresses(std::string_view list, std::vector<IpAddress>* out, std::string* error) {
  out->clear();
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    const auto ip = IpAddress::Parse(item);
    if (!ip) {
      *error = "-localip: not an IP address: \"" + std::string(item) + "\"";
      return false;
    }
    if (std::find(out->begin(), out->end(), *ip) == out->end()) out->push_back(*ip);
    if (comma == std::string_view::npos) return true;
    list.remove_prefix(comma + 1);
  }
}

// The options after "--" the nanny sets itself in node-local mode.
bool RefuseChildOption(const std::vector<std::string>& child_args, std::string_view name,
                       std::string_view flag, std::string* error) {
  if (!HasLongOption(child_args, name)) return true;
  *error = "--" + std::string(name) + " after \"--\": in node-local mode " + std::string(flag) +
           " sets it";
  return false;
}

}  // namespace

bool BuildNodeLocalOptions(const NodeLocalFlags& flags, const std::vector<std::string>& child_args,
                           Nanny::Options* options, std::string* error) {
  NodeLocal::Options node;
  if (!ParseAddresses(flags.localip, &node.addresses, error)) return false;
  if (flags.health_port < 1 || flags.health_port > 65535) {
    *error = "-health-port: not a port: " + std::to_string(flags.health_port);
    return false;
  }
  node.health_port = static_cast<uint16_t>(flags.health_port);
  const std::optional<uint64_t> sync_ms = ParseDurationMs(flags.syncinterval);
  if (!sync_ms || *sync_ms == 0) {
    *error = "-syncinterval: not a duration of more than 0: \"" + flags.syncinterval + "\"";
    return false;
  }
  node.sync_interval_ms = *sync_ms;
  const std::optional<FirewallChoice> firewall = ParseFirewallChoice(flags.firewall);
  if (!firewall) {
    *error = "--firewall: auto, nftables or iptables, not \"" + flags.firewall + "\"";
    return false;
  }
  node.firewall = *firewall;
  if (flags.setupinterface && flags.interfacename.empty()) {
    *error = "-interfacename: empty";
    return false;
  }
  node.setup_interface = flags.setupinterface;
  node.interface_name = flags.interfacename;
  node.setup_firewall = flags.setupiptables;
  node.skip_teardown = flags.skipteardown;
  if (flags.upstreamsvc.empty()) {
    *error = "-upstreamsvc: empty";
    return false;
  }
  const std::optional<loop::SocketAddress> metrics =
      loop::SocketAddress::Parse(flags.metrics_listen_address);
  if (!metrics) {
    *error = "-metrics-listen-address: not an IP:port: \"" + flags.metrics_listen_address + "\"";
    return false;
  }
  if (flags.kubednscm.empty()) {
    *error = "-kubednscm: empty";
    return false;
  }
  if (options->mode != ApplyMode::kInPlace) {
    *error = "-localip: node-local mode needs frontend-cache as the child (-dnsmasqExec)";
    return false;
  }
  if (!RefuseChildOption(child_args, "listen-address", "-localip", error) ||
      !RefuseChildOption(child_args, "prometheus-addr", "-metrics-listen-address", error) ||
      !RefuseChildOption(child_args, "prometheus-address", "-metrics-listen-address", error) ||
      !RefuseChildOption(child_args, "prometheus-port", "-metrics-listen-address", error)) {
    return false;
  }
  ListenSpec listen;
  if (!ParseListenSpec(child_args, &listen, error)) return false;
  node.dns_port = listen.port;
  options->listen.clear();
  std::string listen_list;
  for (const IpAddress& address : node.addresses) {
    options->listen.push_back(loop::SocketAddressOf(address, listen.port));
    listen_list += (listen_list.empty() ? "" : ",") + address.ToString();
  }
  options->child_argv.push_back("--listen-address=" + listen_list);
  options->child_argv.push_back("--prometheus-addr=" + metrics->HostString());
  options->child_argv.push_back("--prometheus-port=" + std::to_string(metrics->port()));
  // The next node cache of an update (maxSurge) binds it beside this one.
  options->child_argv.push_back("--prometheus-reuseport");
  options->config_dir = flags.kubednscm;
  options->upstream_service = flags.upstreamsvc;
  options->node_local = std::move(node);
  return true;
}

std::string ServiceHostVariable(std::string_view service) {
  std::string name;
  for (char c : service) {
    name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name + "_SERVICE_HOST";
}

bool ServiceClusterIp(const std::string& service,
                      const std::function<const char*(const char*)>& getenv, IpAddress* ip,
                      std::string* error) {
  const std::string variable = ServiceHostVariable(service);
  const char* value = getenv(variable.c_str());
  if (value == nullptr || *value == '\0') {
    *error = "-upstreamsvc " + service + ": " + variable +
             " is not set (the Service must exist when the pod is created)";
    return false;
  }
  const auto parsed = IpAddress::Parse(value);
  if (!parsed) {
    *error =
        "-upstreamsvc " + service + ": " + variable + " is not an IP address: \"" + value + "\"";
    return false;
  }
  *ip = *parsed;
  return true;
}

std::string IgnoredFlagsWarning(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "-" : ", -") + name;
  return text + (names.size() == 1 ? " has" : " have") +
         " no meaning for kdns: the kube-dns ConfigMap (-kubednscm) and the flags replace the "
         "Corefile";
}

}  // namespace kdns::nanny

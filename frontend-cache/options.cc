#include "frontend-cache/options.h"

#include "common/loop/tls_session.h"
#include "common/server/debug_http.h"
#include "frontend-cache/option_table.h"

namespace kdns::frontend {

namespace {

struct Refused {
  std::string_view name;
  char short_name;
  std::string_view what_to_do;
};

// dnsmasq's options frontend-cache recognises and refuses, each with what to do instead.
std::span<const Refused> RefusedOptions() {
  static constexpr std::string_view kConfig =
      "configuration files are not read: give each option on the command line (the nanny "
      "adds the ConfigMap's stubDomains and upstreamNameservers as --server)";
  static constexpr std::string_view kDhcp =
      "DHCP, BOOTP, TFTP and router advertisements are not served";
  static constexpr std::string_view kRecords =
      "records other than A, AAAA and PTR are not served here: put addresses in an "
      "--addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone";
  static constexpr std::string_view kAuth =
      "authoritative zones are not served here (kubedns serves the cluster's): serve the "
      "zone from an authoritative server and name it in stubDomains";
  static constexpr std::string_view kRandomPorts =
      "every upstream query comes from a random port of a pool: drop the option";
  static constexpr std::string_view kClientAddress =
      "the client's address goes only to the upstreams trusted with it, in kdns's own "
      "option (--client-address-to): drop the option";
  static constexpr std::string_view kNotImplemented =
      "not implemented by frontend-cache: drop the option";
  static constexpr std::string_view kDnssec =
      "DNSSEC is validated by the upstream resolver: frontend-cache passes the DO and CD bits "
      "through";
  static constexpr Refused kRefused[] = {
      {"conf-file", 'C', kConfig},
      {"conf-dir", '7', kConfig},
      {"conf-script", 0, kConfig},
      {"dhcp-range", 'F', kDhcp},
      {"dhcp-host", 'G', kDhcp},
      {"dhcp-option", 'O', kDhcp},
      {"dhcp-authoritative", 'K', kDhcp},
      {"dhcp-leasefile", 'l', kDhcp},
      {"cname", 0, kRecords},
      {"host-record", 0, kRecords},
      {"ptr-record", 0, kRecords},
      {"txt-record", 'Y', kRecords},
      {"srv-host", 'W', kRecords},
      {"mx-host", 'm', kRecords},
      {"naptr-record", 0, kRecords},
      {"caa-record", 0, kRecords},
      {"dns-rr", 0, kRecords},
      {"synth-domain", 0, kRecords},
      {"interface-name", 0, kRecords},
      {"expand-hosts", 'E',
       "hosts-file names are served as written: write the full names in "
       "the --addn-hosts file"},
      {"domain", 's',
       "hosts-file names are served as written: write the full names in the "
       "--addn-hosts file"},
      {"dnssec", 0, kDnssec},
      {"trust-anchor", 0, kDnssec},
      {"dnssec-check-unsigned", 0, kDnssec},
      {"stop-dns-rebind", 0, "DNS rebinding protection is not implemented: drop the option"},
      {"rebind-domain-ok", 0, "DNS rebinding protection is not implemented: drop the option"},
      {"except-interface", 'I',
       "name the addresses to serve with --listen-address or "
       "--interface instead"},
      {"query-port", 'Q',
       "every upstream query comes from a fresh random port: drop the "
       "option"},
      {"edns-packet-max", 'P',
       "the EDNS payload advertised is 1232 bytes (DNS flag day "
       "2020): drop the option"},
      {"max-ttl", 0, "use --max-cache-ttl (how long an answer is cached)"},
      {"filter-A", 0, "only --filter-AAAA is implemented"},
      {"filter-rr", 0, "only --filter-AAAA is implemented"},
      {"bogus-nxdomain", 'B', "not implemented: drop the option"},
      {"clear-on-reload", 0,
       "SIGHUP keeps only the cache entries whose route did not change: "
       "drop the option"},
      {"rev-server", 0, "use --server=/<reverse zone>/<ip> instead"},
      {"group", 'g', "set runAsGroup in the container's securityContext instead"},
      // The rest of dnsmasq 2.90's options (its --help), so that none is an unknown flag.
      {"dhcp-hostsfile", 0, kDhcp},
      {"dhcp-optsfile", 0, kDhcp},
      {"dhcp-hostsdir", 0, kDhcp},
      {"dhcp-optsdir", 0, kDhcp},
      {"tag-if", 0, kDhcp},
      {"dhcp-userclass", 'j', kDhcp},
      {"dhcp-circuitid", 0, kDhcp},
      {"dhcp-remoteid", 0, kDhcp},
      {"dhcp-subscrid", 0, kDhcp},
      {"dhcp-pxe-vendor", 0, kDhcp},
      {"dhcp-ignore", 'J', kDhcp},
      {"dhcp-broadcast", 0, kDhcp},
      {"dhcp-boot", 'M', kDhcp},
      {"dhcp-option-force", 0, kDhcp},
      {"dhcp-vendorclass", 'U', kDhcp},
      {"dhcp-lease-max", 'X', kDhcp},
      {"read-ethers", 'Z', kDhcp},
      {"no-dhcp-interface", '2', kDhcp},
      {"no-dhcpv6-interface", 0, kDhcp},
      {"no-dhcpv4-interface", 0, kDhcp},
      {"bootp-dynamic", '3', kDhcp},
      {"dhcp-mac", '4', kDhcp},
      {"bridge-interface", 0, kDhcp},
      {"shared-network", 0, kDhcp},
      {"no-ping", '5', kDhcp},
      {"dhcp-script", '6', kDhcp},
      {"dhcp-luascript", 0, kDhcp},
      {"dhcp-scriptuser", 0, kDhcp},
      {"script-arp", 0, kDhcp},
      {"leasefile-ro", '9', kDhcp},
      {"dhcp-ignore-names", 0, kDhcp},
      {"dhcp-no-override", 0, kDhcp},
      {"enable-tftp", 0, kDhcp},
      {"tftp-root", 0, kDhcp},
      {"tftp-unique-root", 0, kDhcp},
      {"tftp-secure", 0, kDhcp},
      {"tftp-no-fail", 0, kDhcp},
      {"tftp-max", 0, kDhcp},
      {"tftp-mtu", 0, kDhcp},
      {"tftp-no-blocksize", 0, kDhcp},
      {"tftp-lowercase", 0, kDhcp},
      {"tftp-port-range", 0, kDhcp},
      {"tftp-single-port", 0, kDhcp},
      {"log-dhcp", 0, kDhcp},
      {"dhcp-match", 0, kDhcp},
      {"dhcp-name-match", 0, kDhcp},
      {"dhcp-alternate-port", 0, kDhcp},
      {"dhcp-fqdn", 0, kDhcp},
      {"dhcp-generate-names", 0, kDhcp},
      {"dhcp-proxy", 0, kDhcp},
      {"dhcp-relay", 0, kDhcp},
      {"pxe-prompt", 0, kDhcp},
      {"pxe-service", 0, kDhcp},
      {"dhcp-sequential-ip", 0, kDhcp},
      {"dhcp-ignore-clid", 0, kDhcp},
      {"dhcp-client-update", 0, kDhcp},
      {"enable-ra", 0, kDhcp},
      {"dhcp-duid", 0, kDhcp},
      {"ra-param", 0, kDhcp},
      {"quiet-dhcp", 0, kDhcp},
      {"quiet-dhcp6", 0, kDhcp},
      {"quiet-ra", 0, kDhcp},
      {"dhcp-ttl", 0, kDhcp},
      {"dhcp-reply-delay", 0, kDhcp},
      {"dhcp-rapid-commit", 0, kDhcp},
      {"script-on-renewal", 0, kDhcp},
      {"quiet-tftp", 0, kDhcp},
      {"selfmx", 'e', kRecords},
      {"localmx", 'L', kRecords},
      {"mx-target", 't', kRecords},
      {"alias", 'V', kRecords},
      {"proxy-dnssec", 0, kDnssec},
      {"dnssec-debug", 0, kDnssec},
      {"dnssec-no-timecheck", 0, kDnssec},
      {"dnssec-timestamp", 0, kDnssec},
      {"dnssec-limits", 0, kDnssec},
      {"auth-server", 0, kAuth},
      {"auth-zone", 0, kAuth},
      {"auth-ttl", 0, kAuth},
      {"auth-soa", 0, kAuth},
      {"auth-sec-servers", 0, kAuth},
      {"auth-peer", 0, kAuth},
      {"filterwin2k", 'f', kNotImplemented},
      {"hostsdir", 0, kNotImplemented},
      {"port-limit", 0, kRandomPorts},
      {"fast-dns-retry", 0,
       "retries and failover follow frontend-cache's own timers (docs/operators.md, "
       "\"Forwarding\"): drop the option"},
      {"pid-file", 'x', "no PID file is written: drop the option"},
      {"localise-queries", 'y', kNotImplemented},
      {"enable-dbus", '1', kNotImplemented},
      {"enable-ubus", 0, kNotImplemented},
      {"rebind-localhost-ok", 0, kNotImplemented},
      {"min-port", 0, kRandomPorts},
      {"max-port", 0, kRandomPorts},
      {"test", 0, kNotImplemented},
      {"add-mac", 0, kClientAddress},
      {"strip-mac", 0, kClientAddress},
      {"add-subnet", 0, kClientAddress},
      {"strip-subnet", 0, kClientAddress},
      {"add-cpe-id", 0, kClientAddress},
      {"conntrack", 0, kNotImplemented},
      {"dynamic-host", 0, kNotImplemented},
      {"bind-dynamic", 0, kNotImplemented},
      {"ipset", 0, kNotImplemented},
      {"nftset", 0, kNotImplemented},
      {"connmark-allowlist-enable", 0, kNotImplemented},
      {"connmark-allowlist", 0, kNotImplemented},
      {"log-debug", 0, "use --v=1 (glog's verbose logging)"},
      {"local-service", 0,
       "restrict who reaches the pod with a NetworkPolicy (manifests/components) instead"},
      {"ignore-address", 0, kNotImplemented},
      {"dumpfile", 0, kNotImplemented},
      {"dumpmask", 0, kNotImplemented},
      {"umbrella", 0, kNotImplemented},
      {"no-ident", 0, kNotImplemented},
      {"cache-rr", 0, kNotImplemented},
      {"max-tcp-connections", 0,
       "use --tcp-max-connections (and --tcp-max-connections-per-source)"},
  };
  return kRefused;
}

// A short letter as --flag-table writes it.
std::string Letter(char short_name) { return short_name == 0 ? "-" : std::string(1, short_name); }

}  // namespace

std::string RefusedOptionReason(std::string_view name) {
  for (const Refused& refused : RefusedOptions()) {
    if (name == refused.name ||
        (name.size() == 1 && refused.short_name != 0 && name[0] == refused.short_name)) {
      return "--" + std::string(refused.name) +
             " (dnsmasq) is not supported by frontend-cache: " + std::string(refused.what_to_do) +
             " (docs/operators.md, \"dnsmasq options\")";
    }
  }
  return {};
}

std::string FlagTableLines() {
  std::string lines;
  for (const OptionSpec& spec : AllOptionSpecs()) {
    const char* kind = spec.optional_value ? "optional" : spec.takes_value ? "value" : "flag";
    lines +=
        "option\t" + std::string(spec.name) + "\t" + Letter(spec.short_name) + "\t" + kind + "\n";
  }
  for (const Refused& refused : RefusedOptions()) {
    lines += "refused\t" + std::string(refused.name) + "\t" + Letter(refused.short_name) + "\t" +
             std::string(refused.what_to_do) + "\n";
  }
  return lines;
}

bool ParseOptions(std::span<const std::string_view> args, Options* options,
                  std::vector<std::string>* rest, std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--") {
      rest->insert(rest->end(), args.begin() + i, args.end());
      break;
    }
    const OptionSpec* spec = nullptr;
    std::string display;  // the option as the user wrote it, for errors
    std::optional<std::string_view> value;
    if (arg.starts_with("--")) {
      std::string_view name = arg.substr(2);
      if (size_t equals = name.find('='); equals != std::string_view::npos) {
        value = name.substr(equals + 1);
        name = name.substr(0, equals);
      }
      spec = FindLong(name);
      display = "--" + std::string(name);
    } else if (arg.size() >= 2 && arg[0] == '-') {
      spec = FindShort(arg[1]);
      // dnsmasq's getopt forms: "-k", "-c 1000", "-c1000". A flag takes nothing attached,
      // so "-kubecfg" stays for gflags.
      if (spec != nullptr && arg.size() > 2) {
        if (spec->takes_value) {
          value = arg.substr(2);
        } else {
          spec = nullptr;
        }
      }
      display = std::string(arg.substr(0, 2));
    }
    if (spec == nullptr) {
      const std::string_view name =
          arg.starts_with("--")
              ? arg.substr(2, arg.find('=') == std::string_view::npos ? std::string_view::npos
                                                                      : arg.find('=') - 2)
          : arg.size() == 2 && arg[0] == '-' ? arg.substr(1, 1)
                                             : std::string_view();
      if (std::string reason = RefusedOptionReason(name); !reason.empty()) {
        *error = reason;
        return false;
      }
      rest->emplace_back(arg);
      continue;
    }
    if (!spec->takes_value && value && !spec->optional_value) {
      *error = display + " takes no value";
      return false;
    }
    if (spec->takes_value && !value) {
      if (i + 1 == args.size()) {
        *error = display + " needs a value";
        return false;
      }
      value = args[++i];
    }
    if (!spec->set(value.value_or(""), options, error)) return false;
  }
  server::RateLimits unused;
  if (!server::MakeRateLimits(options->rate_limits, nullptr, &unused, error)) return false;
  if (!options->tls_ca_file.empty() && !loop::TlsContext::Create(options->tls_ca_file, error)) {
    *error = "--tls-ca-file: " + *error;
    return false;
  }
  if (options->max_cache_ttl_s != 0 && options->max_cache_ttl_s < options->min_cache_ttl_s) {
    *error = "--min-cache-ttl (" + std::to_string(options->min_cache_ttl_s) +
             ") is above --max-cache-ttl (" + std::to_string(options->max_cache_ttl_s) + ")";
    return false;
  }
  if (options->debug_address && options->prometheus_port != 0) {
    *error = server::DebugAddressClash(
        *options->debug_address, "--prometheus-port",
        loop::SocketAddressOf(options->prometheus_address, options->prometheus_port));
    if (!error->empty()) return false;
  }
  for (const auto& [name, value] :
       {std::pair{"--forward-max-per-route", options->forward_max_per_route},
        std::pair{"--forward-max-per-upstream", options->forward_max_per_upstream}}) {
    if (value > options->dns_forward_max) {
      *error = std::string(name) + " (" + std::to_string(value) + ") is above --dns-forward-max (" +
               std::to_string(options->dns_forward_max) + ")";
      return false;
    }
  }
  return true;
}

CacheOptions ToCacheOptions(const Options& options) {
  CacheOptions cache;
  cache.capacity = options.cache_size;
  cache.policy.min_ttl_s = options.min_cache_ttl_s;
  if (options.max_cache_ttl_s != 0) cache.policy.max_ttl_s = options.max_cache_ttl_s;
  cache.max_bytes = options.cache_bytes;
  cache.max_entry_bytes = options.cache_entry_max_bytes;
  cache.policy.negative_caching = !options.no_negcache;
  cache.policy.exact_negative_zones = options.serial_zones;
  if (options.neg_ttl_s && *options.neg_ttl_s > 0) cache.policy.neg_ttl_s = options.neg_ttl_s;
  cache.stale_max_s = options.stale_max_s;
  return cache;
}

}  // namespace kdns::frontend

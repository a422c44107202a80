#include "frontend-cache/options.h"

#include <charconv>
#include <functional>
#include <type_traits>

#include "common/base/duration.h"
#include "common/server/debug_http.h"

namespace kdns::frontend {
namespace {

using QueryLog = server::QueryLogOptions;
using Setter = std::function<bool(std::string_view value, Options* options, std::string* error)>;

struct OptionSpec {
  std::string_view name;  // long form, without "--"
  char short_name;        // dnsmasq's short form, or 0
  bool takes_value;
  Setter set;
  // A flag that may carry a value with "=" (--log-queries=extra); never the next argument.
  bool optional_value = false;
};

bool ParseUint(std::string_view text, uint64_t max, uint64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && ptr == end && *value <= max;
}

// Where a setter stores its value: a member of Options, or a member of one of its parts
// (tcp, rate_limits, log_queries).
template <typename T>
auto In(T Options::*field) {
  return [field](Options* options) -> T& { return options->*field; };
}
template <typename Part, typename T>
auto In(Part Options::*part, T Part::*field) {
  return [part, field](Options* options) -> T& { return (options->*part).*field; };
}

// An unsigned number in [min, max]; `what` names it in the error ("a number of seconds"),
// `hint` follows the range.
template <typename Where>
Setter Number(Where where, uint64_t min, uint64_t max, std::string_view name,
              std::string_view what = "a number", std::string_view hint = {}) {
  return [=](std::string_view value, Options* options, std::string* error) {
    uint64_t number = 0;
    if (!ParseUint(value, max, &number) || number < min) {
      *error = "--" + std::string(name) + ": \"" + std::string(value) + "\" is not " +
               std::string(what) + " in " + std::to_string(min) + ".." + std::to_string(max) +
               std::string(hint);
      return false;
    }
    auto& target = where(options);
    target = static_cast<std::remove_reference_t<decltype(target)>>(number);
    return true;
  };
}

// Number() into a member of Options.
template <typename T>
Setter Uint(T Options::*field, uint64_t min, uint64_t max, std::string_view name) {
  return Number(In(field), min, max, name);
}

template <typename Where>
Setter Seconds(Where where, std::string_view name) {
  return Number(where, 0, UINT32_MAX, name, "a number of seconds");
}

// A duration stored in milliseconds: seconds, or a Go duration ("2s", "500ms").
template <typename Where>
Setter DurationMs(Where where, std::string_view name, std::string_view example) {
  return [=](std::string_view value, Options* options, std::string* error) {
    uint64_t seconds = 0;
    if (ParseUint(value, UINT32_MAX, &seconds)) {
      where(options) = seconds * 1000;
      return true;
    }
    std::optional<uint64_t> ms = ParseDurationMs(value);
    if (!ms) {
      *error = "--" + std::string(name) + ": \"" + std::string(value) +
               "\" is not a duration (e.g. " + std::string(example) + ", 500ms, or seconds)";
      return false;
    }
    where(options) = *ms;
    return true;
  };
}

// A text that must not be empty, set or appended to a list; `empty` is the error's end
// ("empty path").
template <typename Where>
Setter NonEmpty(Where where, std::string_view name, std::string_view empty) {
  return [=](std::string_view value, Options* options, std::string* error) {
    if (value.empty()) {
      *error = "--" + std::string(name) + ": " + std::string(empty);
      return false;
    }
    auto& target = where(options);
    if constexpr (std::is_same_v<std::remove_reference_t<decltype(target)>, std::string>) {
      target = value;
    } else {
      target.emplace_back(value);
    }
    return true;
  };
}

Setter Flag(bool Options::*field) {
  return [=](std::string_view, Options* options, std::string*) {
    options->*field = true;
    return true;
  };
}

std::string_view Trim(std::string_view text) {
  size_t start = text.find_first_not_of(' ');
  if (start == std::string_view::npos) return {};
  return text.substr(start, text.find_last_not_of(' ') - start + 1);
}

// --prometheus-addr (the sidecar's kube-dns spelling, one for every program of the pod), and
// its deprecated old name --prometheus-address, which still works, with a warning.
Setter PrometheusAddr(std::string_view flag) {
  return [flag](std::string_view value, Options* options, std::string* error) {
    std::optional<IpAddress> address = IpAddress::Parse(value);
    if (!address) {
      *error = "--" + std::string(flag) + ": \"" + std::string(value) + "\" is not an IP address";
      return false;
    }
    options->prometheus_address = *address;
    if (flag != "prometheus-addr") {
      const std::string warning =
          "--" + std::string(flag) + " is deprecated: it is --prometheus-addr";
      if (std::find(options->warnings.begin(), options->warnings.end(), warning) ==
          options->warnings.end()) {
        options->warnings.push_back(warning);
      }
    }
    return true;
  };
}

const std::vector<OptionSpec>& Specs() {
  static const std::vector<OptionSpec> specs{
      {"server", 'S', true,
       [](std::string_view value, Options* options, std::string* error) {
         ServerOption server;
         if (!ParseServerOption(value, &server, error)) {
           *error = "--server=" + std::string(value) + ": " + *error;
           return false;
         }
         options->servers.push_back(std::move(server));
         return true;
       }},
      {"cache-size", 'c', true, Uint(&Options::cache_size, 0, kMaxCacheSize, "cache-size")},
      {"no-negcache", 'N', false, Flag(&Options::no_negcache)},
      {"neg-ttl", 0, true, Seconds(In(&Options::neg_ttl_s), "neg-ttl")},
      {"dns-loop-detect", 0, false, Flag(&Options::dns_loop_detect)},
      {"log-facility", '8', true,
       NonEmpty(In(&Options::log_facility), "log-facility", "empty value (use - for stderr)")},
      {"no-resolv", 'R', false, Flag(&Options::no_resolv)},
      {"resolv-file", 'r', true, NonEmpty(In(&Options::resolv_file), "resolv-file", "empty path")},
      {"dns-forward-max", '0', true,
       Uint(&Options::dns_forward_max, 1, 1'000'000, "dns-forward-max")},
      {"listen-address", 'a', true,
       [](std::string_view value, Options* options, std::string* error) {
         // dnsmasq takes a comma-separated list.
         while (true) {
           size_t comma = value.find(',');
           std::string_view item = Trim(value.substr(0, comma));
           std::optional<IpAddress> address = IpAddress::Parse(item);
           if (!address) {
             *error = "--listen-address: \"" + std::string(item) + "\" is not an IP address";
             return false;
           }
           options->listen_addresses.push_back(*address);
           if (comma == std::string_view::npos) return true;
           value = value.substr(comma + 1);
         }
       }},
      {"port", 'p', true, Uint(&Options::port, 0, 65535, "port")},
      {"keep-in-foreground", 'k', false, Flag(&Options::keep_in_foreground)},
      {"threads", 0, true, Uint(&Options::threads, 0, 1024, "threads")},
      {"receiver-threads", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (value == "auto") {
           options->receiver_threads = ReceiverThreads::kAuto;
         } else if (value == "on") {
           options->receiver_threads = ReceiverThreads::kOn;
         } else if (value == "off") {
           options->receiver_threads = ReceiverThreads::kOff;
         } else {
           *error = "--receiver-threads: \"" + std::string(value) + "\" is not auto, on or off";
           return false;
         }
         return true;
       }},
      // The cache's bounds.
      {"max-cache-ttl", 0, true, Seconds(In(&Options::max_cache_ttl_s), "max-cache-ttl")},
      {"min-cache-ttl", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (!Uint(&Options::min_cache_ttl_s, 0, UINT32_MAX, "min-cache-ttl")(value, options,
                                                                              error)) {
           return false;
         }
         options->min_cache_ttl_s = std::min(options->min_cache_ttl_s, kMinCacheTtlLimitS);
         return true;
       }},
      {"cache-bytes", 0, true,
       Uint(&Options::cache_bytes, kMinCacheBytes, kMaxCacheBytes, "cache-bytes")},
      {"cache-entry-max-bytes", 0, true,
       Uint(&Options::cache_entry_max_bytes, 512, 65535, "cache-entry-max-bytes")},
      {"stale-max", 0, true, Uint(&Options::stale_max_s, 0, UINT32_MAX, "stale-max")},
      {"lameduck", 0, true, DurationMs(In(&Options::lameduck_ms), "lameduck", "5s")},
      {"servers-file", 0, true, NonEmpty(In(&Options::servers_file), "servers-file", "empty path")},
      {"prometheus-addr", 0, true, PrometheusAddr("prometheus-addr")},
      {"prometheus-address", 0, true, PrometheusAddr("prometheus-address")},  // deprecated
      {"debug-address", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         return server::ParseDebugAddress(value, server::kDebugAddressFlag, &options->debug_address,
                                          error);
       }},
      {"metrics-textfile", 0, true,
       NonEmpty(In(&Options::metrics_textfile), "metrics-textfile", "empty path")},
      {"prometheus-port", 0, true, Uint(&Options::prometheus_port, 0, 65535, "prometheus-port")},
      // Forwarding budgets.
      {"forward-max-per-route", 0, true,
       Uint(&Options::forward_max_per_route, 0, 1'000'000, "forward-max-per-route")},
      {"forward-max-per-upstream", 0, true,
       Uint(&Options::forward_max_per_upstream, 0, 1'000'000, "forward-max-per-upstream")},
      {"upstream-0x20", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (upstream::ParseDns0x20(value, &options->upstream_0x20)) return true;
         *error = "--upstream-0x20: \"" + std::string(value) + "\" is not auto, on or off";
         return false;
       }},
      {"forward-client-reserve", 0, true,
       Uint(&Options::forward_client_reserve, 0, upstream::ForwardBudgets::kMaxClientReservePercent,
            "forward-client-reserve")},
      // DNS over TCP limits.
      {"tcp-idle-timeout", 0, true,
       DurationMs(In(&Options::tcp, &server::TcpOptions::idle_timeout_ms), "tcp-idle-timeout",
                  "2s")},
      {"tcp-frame-timeout", 0, true,
       DurationMs(In(&Options::tcp, &server::TcpOptions::frame_timeout_ms), "tcp-frame-timeout",
                  "2s")},
      {"tcp-query-timeout", 0, true,
       DurationMs(In(&Options::tcp, &server::TcpOptions::query_timeout_ms), "tcp-query-timeout",
                  "5s")},
      {"tcp-max-connections", 0, true,
       Number(In(&Options::tcp, &server::TcpOptions::max_connections), 1, 1'000'000,
              "tcp-max-connections")},
      {"tcp-max-connections-per-source", 0, true,
       Number(In(&Options::tcp, &server::TcpOptions::max_connections_per_source), 1, 1'000'000,
              "tcp-max-connections-per-source")},
      {"tcp-max-output-bytes-per-connection", 0, true,
       Number(In(&Options::tcp, &server::TcpOptions::max_pending_output_bytes),
              server::kMinTcpOutputBytes, 1ULL << 30, "tcp-max-output-bytes-per-connection")},
      {"tcp-max-output-bytes-total", 0, true,
       Number(In(&Options::tcp, &server::TcpOptions::max_pending_output_bytes_total),
              server::kMinTcpOutputBytes, 1ULL << 40, "tcp-max-output-bytes-total")},
      // Waiting queries.
      {"max-waiting-queries", 0, true,
       Uint(&Options::max_waiting_queries, 1, 1'000'000, "max-waiting-queries")},
      // Per-client rate limit and RRL (common/server/rate_limits.h).
      {"client-rate-limit", 0, true,
       Number(In(&Options::rate_limits, &server::RateLimitFlags::client_rate_limit), 0, INT64_MAX,
              "client-rate-limit")},
      {"client-rate-burst", 0, true,
       Number(In(&Options::rate_limits, &server::RateLimitFlags::client_rate_burst), 0, INT64_MAX,
              "client-rate-burst")},
      {"client-rate-prefix-v4", 0, true,
       Number(In(&Options::rate_limits, &server::RateLimitFlags::client_rate_prefix_v4), 0,
              INT64_MAX, "client-rate-prefix-v4")},
      {"client-rate-prefix-v6", 0, true,
       Number(In(&Options::rate_limits, &server::RateLimitFlags::client_rate_prefix_v6), 0,
              INT64_MAX, "client-rate-prefix-v6")},
      {"client-rate-slip", 0, true,
       Number(In(&Options::rate_limits, &server::RateLimitFlags::client_rate_slip), 0, INT64_MAX,
              "client-rate-slip")},
      {"client-rate-exempt", 0, true,
       [](std::string_view value, Options* options, std::string*) {
         options->rate_limits.client_rate_exempt = std::string(value);
         return true;
       }},
      {"rrl-responses-per-second", 0, true,
       Number(In(&Options::rate_limits, &server::RateLimitFlags::rrl_responses_per_second), 0,
              INT64_MAX, "rrl-responses-per-second")},
      // The client's address, to the upstreams trusted with it (server/admission.h).
      {"client-address-to", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (ParsePrefixList(value, &options->client_address_to, error)) return true;
         *error = "--client-address-to: " + *error;
         return false;
       }},
      // Exact negative caching: NOTIFY and the SOA serial poll.
      {"notify-from", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (ParsePrefixList(value, &options->notify_from, error)) return true;
         *error = "--notify-from: " + *error;
         return false;
       }},
      {"serial-zones", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         options->serial_zones.clear();
         while (!value.empty()) {
           const size_t comma = value.find(',');
           const std::string_view item = Trim(value.substr(0, comma));
           std::optional<dns::Name> zone = dns::Name::FromText(item);
           if (item.empty() || !zone) {
             *error = "--serial-zones: \"" + std::string(item) + "\" is not a domain";
             return false;
           }
           options->serial_zones.push_back(zone->Lowercased());
           if (comma == std::string_view::npos) break;
           value = value.substr(comma + 1);
         }
         return true;
       }},
      {"serial-poll", 0, true, DurationMs(In(&Options::serial_poll_ms), "serial-poll", "1s")},
      {"client-address-option", 0, true,
       Uint(&Options::client_address_option, dns::kMinPrivateOptionCode, dns::kMaxPrivateOptionCode,
            "client-address-option")},
      // dnsmasq's options kube-dns Deployments pass (docs/operators.md, "dnsmasq
      // options").
      {"no-daemon", 'd', false, Flag(&Options::keep_in_foreground)},
      {"local", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         // dnsmasq: --local is --server, for clearer configuration files.
         ServerOption server;
         if (!ParseServerOption(value, &server, error)) {
           *error = "--local=" + std::string(value) + ": " + *error;
           return false;
         }
         options->servers.push_back(std::move(server));
         return true;
       }},
      {"address", 'A', true,
       [](std::string_view value, Options* options, std::string* error) {
         AddressOption address;
         ServerOption server;
         bool local = false;
         if (!ParseAddressOption(value, &address, &server, &local, error)) {
           *error = "--address=" + std::string(value) + ": " + *error;
           return false;
         }
         if (local) {
           options->servers.push_back(std::move(server));
         } else {
           options->addresses.push_back(std::move(address));
         }
         return true;
       }},
      {"no-hosts", 'h', false, Flag(&Options::no_hosts)},
      {"addn-hosts", 'H', true, NonEmpty(In(&Options::addn_hosts), "addn-hosts", "empty path")},
      {"local-ttl", 'T', true, Seconds(In(&Options::local_ttl_s), "local-ttl")},
      {"domain-needed", 'D', false, Flag(&Options::domain_needed)},
      {"bogus-priv", 'b', false, Flag(&Options::bogus_priv)},
      {"filter-AAAA", 0, false, Flag(&Options::filter_aaaa)},
      {"strict-order", 'o', false, Flag(&Options::strict_order)},
      {"all-servers", 0, false, Flag(&Options::all_servers)},
      {"user", 'u', true, NonEmpty(In(&Options::user), "user", "empty user name")},
      {"interface", 'i', true,
       [](std::string_view value, Options* options, std::string* error) {
         // dnsmasq takes a comma-separated list.
         while (true) {
           size_t comma = value.find(',');
           std::string_view item = Trim(value.substr(0, comma));
           if (item.empty() || item.find('*') != std::string_view::npos) {
             *error = "--interface: \"" + std::string(item) +
                      "\" is not an interface name (wildcards are not supported)";
             return false;
           }
           options->interfaces.emplace_back(item);
           if (comma == std::string_view::npos) return true;
           value = value.substr(comma + 1);
         }
       }},
      {"bind-interfaces", 'z', false, Flag(&Options::bind_interfaces)},
      {"no-poll", 'n', false, Flag(&Options::no_poll)},
      {"log-queries", 'q', false,
       [](std::string_view value, Options* options, std::string* error) {
         using Detail = server::QueryLogOptions::Detail;
         if (value.empty()) {
           // dnsmasq: -q twice is "extra"; once more keeps what is there.
           if (options->log_queries.detail == Detail::kOff) {
             options->log_queries.detail = Detail::kBasic;
           } else {
             options->log_queries.detail = Detail::kExtra;
           }
         } else if (value == "extra" || value == "proto" || value == "auth") {
           // dnsmasq's proto and auth levels add what it logs beyond a query's answer;
           // ours is the same line as extra.
           options->log_queries.detail = Detail::kExtra;
         } else {
           *error = "--log-queries: \"" + std::string(value) +
                    "\" is not extra, proto or auth (or nothing)";
           return false;
         }
         return true;
       },
       /*optional_value=*/true},
      {"log-queries-rate", 0, true,
       Number(In(&Options::log_queries, &QueryLog::max_lines_per_second), 0, 1'000'000,
              "log-queries-rate", "a number of lines a second")},
      {"log-queries-sample", 0, true,
       Number(In(&Options::log_queries, &QueryLog::sample_one_in), 1, 1'000'000,
              "log-queries-sample", "a number", " (log one query in N)")},
  };
  return specs;
}

const OptionSpec* FindLong(std::string_view name) {
  for (const OptionSpec& spec : Specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const OptionSpec* FindShort(char name) {
  for (const OptionSpec& spec : Specs()) {
    if (spec.short_name == name) return &spec;
  }
  return nullptr;
}

// The address of a --server value (kDnsmasqSyntax), with the errors worded for --server.
std::optional<loop::SocketAddress> ParseServerAddress(std::string_view text, std::string* error) {
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
    const size_t last = value.rfind('/');
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
  std::optional<loop::SocketAddress> upstream = ParseServerAddress(target, error);
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

std::string RefusedOptionReason(std::string_view name) {
  struct Refused {
    std::string_view name;
    char short_name;
    std::string_view what_to_do;
  };
  static constexpr std::string_view kConfig =
      "configuration files are not read: give each option on the command line (the nanny "
      "adds the ConfigMap's stubDomains and upstreamNameservers as --server)";
  static constexpr std::string_view kDhcp = "DHCP is not served";
  static constexpr std::string_view kRecords =
      "records other than A, AAAA and PTR are not served here: put addresses in an "
      "--addn-hosts file, or serve the record from kubedns (a Service) or the upstream zone";
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
  };
  for (const Refused& refused : kRefused) {
    if (name == refused.name ||
        (name.size() == 1 && refused.short_name != 0 && name[0] == refused.short_name)) {
      return "--" + std::string(refused.name) +
             " (dnsmasq) is not supported by frontend-cache: " + std::string(refused.what_to_do) +
             " (docs/operators.md, \"dnsmasq options\")";
    }
  }
  return {};
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

bool ParseServersFile(std::string_view text, std::vector<ServerOption>* servers,
                      std::string* error) {
  size_t number = 0;
  while (!text.empty()) {
    ++number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    constexpr std::string_view kServer = "server=";
    if (!line.starts_with(kServer)) {
      *error = "line " + std::to_string(number) + ": \"" + std::string(line) +
               "\": only server=... lines are allowed";
      return false;
    }
    ServerOption server;
    if (!ParseServerOption(line.substr(kServer.size()), &server, error)) {
      *error = "line " + std::to_string(number) + ": " + std::string(line) + ": " + *error;
      return false;
    }
    servers->push_back(std::move(server));
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

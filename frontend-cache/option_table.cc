// Every option frontend-cache takes (option_table.h): dnsmasq's and our own, each with the
// setter that checks its value and stores it into Options.
#include "frontend-cache/option_table.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <type_traits>

#include "common/base/duration.h"
#include "common/base/trim.h"
#include "common/metrics/coredns_compat.h"
#include "common/server/debug_http.h"

namespace kdns::frontend {
namespace {

using QueryLog = server::QueryLogOptions;

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

// --server (or its dnsmasq synonym `flag`): one more upstream, domain rule or local domain;
// errors name the flag the user wrote.
Setter AddServer(std::string_view flag) {
  return [flag](std::string_view value, Options* options, std::string* error) {
    ServerOption server;
    if (!ParseServerOption(value, &server, error)) {
      *error = "--" + std::string(flag) + "=" + std::string(value) + ": " + *error;
      return false;
    }
    options->servers.push_back(std::move(server));
    return true;
  };
}

// --route-options: one more entry (common/upstream/route_options.h).
Setter AddRouteOptions() {
  return [](std::string_view value, Options* options, std::string* error) {
    upstream::RouteOptionsEntry entry;
    if (!upstream::ParseRouteOptionsEntry(value, &entry, error)) {
      *error = "--route-options=" + std::string(value) + ": " + *error;
      return false;
    }
    options->route_options.push_back(std::move(entry));
    return true;
  };
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

// dnsmasq's --use-stale-cache[=N]: answers past their TTL. frontend-cache serves them only
// when every upstream fails (RFC 8767), for --stale-max seconds; dnsmasq serves them at once
// and refreshes in the background. N (dnsmasq's cap on the excess; 0: none) sets
// --stale-max; the difference is a warning, the option is not refused, so a dnsmasq
// Deployment keeps its arguments.
bool UseStaleCache(std::string_view value, Options* options, std::string* error) {
  uint64_t seconds = 0;
  if (!value.empty() && !ParseUint(value, UINT32_MAX, &seconds)) {
    *error = "--use-stale-cache: \"" + std::string(value) + "\" is not a number of seconds";
    return false;
  }
  if (seconds != 0) options->stale_max_s = static_cast<uint32_t>(seconds);
  const std::string warning =
      "--use-stale-cache: expired answers are served only when every upstream fails, for up "
      "to --stale-max=" +
      std::to_string(options->stale_max_s) + " seconds (dnsmasq serves them at once)";
  options->warnings.push_back(warning);
  return true;
}

const std::vector<OptionSpec>& Specs() {
  static const std::vector<OptionSpec> specs{
      {"server", 'S', true, AddServer("server")},
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
      {"use-stale-cache", 0, false, UseStaleCache, /*optional_value=*/true},
      {"lameduck", 0, true, DurationMs(In(&Options::lameduck_ms), "lameduck", "5s")},
      {"route-options", 0, true, AddRouteOptions()},
      {"servers-file", 0, true, NonEmpty(In(&Options::servers_file), "servers-file", "empty path")},
      {"tls-ca-file", 0, true, NonEmpty(In(&Options::tls_ca_file), "tls-ca-file", "empty path")},
      {"prometheus-addr", 0, true, PrometheusAddr("prometheus-addr")},
      {"prometheus-address", 0, true, PrometheusAddr("prometheus-address")},  // deprecated
      {"debug-address", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         return server::ParseDebugAddress(value, server::kDebugAddressFlag, &options->debug_address,
                                          error);
       }},
      {"metrics-textfile", 0, true,
       NonEmpty(In(&Options::metrics_textfile), "metrics-textfile", "empty path")},
      {"metrics-compat", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (metrics::ParseMetricsCompat(value, &options->metrics_compat)) return true;
         *error = "--metrics-compat: \"" + std::string(value) + "\" is not none or coredns";
         return false;
       }},
      {"prometheus-port", 0, true, Uint(&Options::prometheus_port, 0, 65535, "prometheus-port")},
      {"prometheus-reuseport", 0, false, Flag(&Options::prometheus_reuse_port)},
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
      {"loadbalance", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (dns::ParseLoadBalance(value, &options->loadbalance)) return true;
         *error = "--loadbalance: \"" + std::string(value) + "\" is not round_robin or off";
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
      // dnsmasq: --local is --server, for clearer configuration files.
      {"local", 0, true, AddServer("local")},
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
      {"hosts-reload", 0, true, DurationMs(In(&Options::hosts_reload_ms), "hosts-reload", "5s")},
      {"local-ttl", 'T', true, Seconds(In(&Options::local_ttl_s), "local-ttl")},
      {"domain-needed", 'D', false, Flag(&Options::domain_needed)},
      {"bogus-priv", 'b', false, Flag(&Options::bogus_priv)},
      // dnsmasq's switch for its rotation of cached answers: --loadbalance=off.
      {"no-round-robin", 0, false,
       [](std::string_view, Options* options, std::string*) {
         options->loadbalance = dns::LoadBalance::kOff;
         return true;
       }},
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

}  // namespace

const OptionSpec* FindLong(std::string_view name) {
  for (const OptionSpec& spec : Specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const std::vector<OptionSpec>& AllOptionSpecs() { return Specs(); }

const OptionSpec* FindShort(char name) {
  for (const OptionSpec& spec : Specs()) {
    if (spec.short_name == name) return &spec;
  }
  return nullptr;
}

}  // namespace kdns::frontend

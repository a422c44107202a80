#include "frontend-cache/options.h"

#include <charconv>
#include <functional>

#include "common/base/duration.h"

namespace kdns::frontend {
namespace {

using Setter = std::function<bool(std::string_view value, Options* options, std::string* error)>;

struct OptionSpec {
  std::string_view name;  // long form, without "--"
  char short_name;        // dnsmasq's short form, or 0
  bool takes_value;
  Setter set;
};

bool ParseUint(std::string_view text, uint64_t max, uint64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return !text.empty() && ec == std::errc() && ptr == end && *value <= max;
}

// A setter for an unsigned field in [min, max].
template <typename T>
Setter Uint(T Options::*field, uint64_t min, uint64_t max, std::string_view name) {
  return [=](std::string_view value, Options* options, std::string* error) {
    uint64_t number = 0;
    if (!ParseUint(value, max, &number) || number < min) {
      *error = "--" + std::string(name) + ": \"" + std::string(value) + "\" is not a number in " +
               std::to_string(min) + ".." + std::to_string(max);
      return false;
    }
    options->*field = static_cast<T>(number);
    return true;
  };
}

// A setter for a number of seconds (a plain or an optional field).
template <typename T>
Setter Seconds(T Options::*field, std::string_view name) {
  return [=](std::string_view value, Options* options, std::string* error) {
    uint64_t number = 0;
    if (!ParseUint(value, UINT32_MAX, &number)) {
      *error = "--" + std::string(name) + ": \"" + std::string(value) +
               "\" is not a number of seconds in 0.." + std::to_string(UINT32_MAX);
      return false;
    }
    options->*field = static_cast<uint32_t>(number);
    return true;
  };
}

Setter Flag(bool Options::*field) {
  return [=](std::string_view, Options* options, std::string*) {
    options->*field = true;
    return true;
  };
}

// A setter for a duration field in milliseconds: a Go duration ("2s", "500ms") or seconds.
Setter DurationMs(uint64_t server::TcpOptions::*field, std::string_view name) {
  return [=](std::string_view value, Options* options, std::string* error) {
    uint64_t seconds = 0;
    if (ParseUint(value, UINT32_MAX, &seconds)) {
      options->tcp.*field = seconds * 1000;
      return true;
    }
    std::optional<uint64_t> ms = ParseDurationMs(value);
    if (!ms) {
      *error = "--" + std::string(name) + ": \"" + std::string(value) +
               "\" is not a duration (e.g. 2s, 500ms, or seconds)";
      return false;
    }
    options->tcp.*field = *ms;
    return true;
  };
}

// A setter for a size_t field of the TCP options in [min, max].
Setter TcpCount(size_t server::TcpOptions::*field, uint64_t min, uint64_t max,
                std::string_view name) {
  return [=](std::string_view value, Options* options, std::string* error) {
    uint64_t number = 0;
    if (!ParseUint(value, max, &number) || number < min) {
      *error = "--" + std::string(name) + ": \"" + std::string(value) + "\" is not a number in " +
               std::to_string(min) + ".." + std::to_string(max);
      return false;
    }
    options->tcp.*field = static_cast<size_t>(number);
    return true;
  };
}

// A rate-limit number (rate_limits.h checks its range once the whole line is read).
Setter RateLimit(int64_t server::RateLimitFlags::*field, std::string_view name) {
  return [=](std::string_view value, Options* options, std::string* error) {
    uint64_t number = 0;
    if (!ParseUint(value, INT64_MAX, &number)) {
      *error = "--" + std::string(name) + ": \"" + std::string(value) + "\" is not a number";
      return false;
    }
    options->rate_limits.*field = static_cast<int64_t>(number);
    return true;
  };
}

std::string_view Trim(std::string_view text) {
  size_t start = text.find_first_not_of(' ');
  if (start == std::string_view::npos) return {};
  return text.substr(start, text.find_last_not_of(' ') - start + 1);
}

const std::vector<OptionSpec>& Specs() {
  static const std::vector<OptionSpec> specs = {
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
      {"neg-ttl", 0, true, Seconds(&Options::neg_ttl_s, "neg-ttl")},
      {"dns-loop-detect", 0, false, Flag(&Options::dns_loop_detect)},
      {"log-facility", '8', true,
       [](std::string_view value, Options* options, std::string* error) {
         if (value.empty()) {
           *error = "--log-facility: empty value (use - for stderr)";
           return false;
         }
         options->log_facility = value;
         return true;
       }},
      {"no-resolv", 'R', false, Flag(&Options::no_resolv)},
      {"resolv-file", 'r', true,
       [](std::string_view value, Options* options, std::string* error) {
         if (value.empty()) {
           *error = "--resolv-file: empty path";
           return false;
         }
         options->resolv_file = value;
         return true;
       }},
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
      {"max-cache-ttl", 0, true, Seconds(&Options::max_cache_ttl_s, "max-cache-ttl")},
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
      {"lameduck", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         uint64_t seconds = 0;
         if (ParseUint(value, UINT32_MAX, &seconds)) {
           options->lameduck_ms = seconds * 1000;
           return true;
         }
         std::optional<uint64_t> ms = ParseDurationMs(value);
         if (!ms) {
           *error = "--lameduck: \"" + std::string(value) +
                    "\" is not a duration (e.g. 5s, 500ms, or seconds)";
           return false;
         }
         options->lameduck_ms = *ms;
         return true;
       }},
      {"servers-file", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (value.empty()) {
           *error = "--servers-file: empty path";
           return false;
         }
         options->servers_file = value;
         return true;
       }},
      {"prometheus-address", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         std::optional<IpAddress> address = IpAddress::Parse(value);
         if (!address) {
           *error = "--prometheus-address: \"" + std::string(value) + "\" is not an IP address";
           return false;
         }
         options->prometheus_address = *address;
         return true;
       }},
      {"metrics-textfile", 0, true,
       [](std::string_view value, Options* options, std::string* error) {
         if (value.empty()) {
           *error = "--metrics-textfile: empty path";
           return false;
         }
         options->metrics_textfile = value;
         return true;
       }},
      {"prometheus-port", 0, true, Uint(&Options::prometheus_port, 0, 65535, "prometheus-port")},
      // Forwarding budgets.
      {"forward-max-per-route", 0, true,
       Uint(&Options::forward_max_per_route, 0, 1'000'000, "forward-max-per-route")},
      {"forward-max-per-upstream", 0, true,
       Uint(&Options::forward_max_per_upstream, 0, 1'000'000, "forward-max-per-upstream")},
      // DNS over TCP limits.
      {"tcp-idle-timeout", 0, true,
       DurationMs(&server::TcpOptions::idle_timeout_ms, "tcp-idle-timeout")},
      {"tcp-frame-timeout", 0, true,
       DurationMs(&server::TcpOptions::frame_timeout_ms, "tcp-frame-timeout")},
      {"tcp-max-connections", 0, true,
       TcpCount(&server::TcpOptions::max_connections, 1, 1'000'000, "tcp-max-connections")},
      {"tcp-max-connections-per-source", 0, true,
       TcpCount(&server::TcpOptions::max_connections_per_source, 1, 1'000'000,
                "tcp-max-connections-per-source")},
      {"tcp-max-output-bytes-per-connection", 0, true,
       TcpCount(&server::TcpOptions::max_pending_output_bytes, server::kMinTcpOutputBytes,
                1ULL << 30, "tcp-max-output-bytes-per-connection")},
      {"tcp-max-output-bytes-total", 0, true,
       TcpCount(&server::TcpOptions::max_pending_output_bytes_total, server::kMinTcpOutputBytes,
                1ULL << 40, "tcp-max-output-bytes-total")},
      // Waiting queries.
      {"max-waiting-queries", 0, true,
       Uint(&Options::max_waiting_queries, 1, 1'000'000, "max-waiting-queries")},
      // Per-client rate limit and RRL (common/server/rate_limits.h).
      {"client-rate-limit", 0, true,
       RateLimit(&server::RateLimitFlags::client_rate_limit, "client-rate-limit")},
      {"client-rate-burst", 0, true,
       RateLimit(&server::RateLimitFlags::client_rate_burst, "client-rate-burst")},
      {"client-rate-prefix-v4", 0, true,
       RateLimit(&server::RateLimitFlags::client_rate_prefix_v4, "client-rate-prefix-v4")},
      {"client-rate-prefix-v6", 0, true,
       RateLimit(&server::RateLimitFlags::client_rate_prefix_v6, "client-rate-prefix-v6")},
      {"client-rate-slip", 0, true,
       RateLimit(&server::RateLimitFlags::client_rate_slip, "client-rate-slip")},
      {"client-rate-exempt", 0, true,
       [](std::string_view value, Options* options, std::string*) {
         options->rate_limits.client_rate_exempt = std::string(value);
         return true;
       }},
      {"rrl-responses-per-second", 0, true,
       RateLimit(&server::RateLimitFlags::rrl_responses_per_second, "rrl-responses-per-second")},
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
std::optional<upstream::UpstreamAddress> ParseServerAddress(std::string_view text,
                                                            std::string* error) {
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
  std::optional<upstream::UpstreamAddress> upstream = ParseServerAddress(target, error);
  if (!upstream) return false;
  server->target = ServerOption::Target::kUpstream;
  server->upstream = *upstream;
  return true;
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
      rest->emplace_back(arg);
      continue;
    }
    if (!spec->takes_value && value) {
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
  if (options.neg_ttl_s && *options.neg_ttl_s > 0) cache.policy.neg_ttl_s = options.neg_ttl_s;
  cache.stale_max_s = options.stale_max_s;
  return cache;
}

}  // namespace kdns::frontend

#include "frontend-cache/options.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/testing.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;

struct Parsed {
  bool ok = false;
  Options options;
  std::vector<std::string> rest;
  std::string error;
};

Parsed Parse(std::vector<std::string_view> args) {
  Parsed parsed;
  parsed.ok = ParseOptions(args, &parsed.options, &parsed.rest, &parsed.error);
  return parsed;
}

loop::SocketAddress Up(std::string_view ip, uint16_t port = 53) {
  return loop::SocketAddressOf(*IpAddress::Parse(ip), port);
}

TEST_CASE("Defaults are dnsmasq's", "[frontend][options]") {
  Parsed parsed = Parse({});
  REQUIRE(parsed.ok);
  CHECK(parsed.options.cache_size == 150);
  CHECK(parsed.options.port == 53);
  // Not dnsmasq's 150: a cold cache's burst of distinct misses needs more (forward_budgets.h).
  CHECK(parsed.options.dns_forward_max == 4096);
  CHECK(parsed.options.forward_max_per_route == 0);
  CHECK(parsed.options.forward_max_per_upstream == 0);
  CHECK(parsed.options.forward_client_reserve == 10);
  CHECK_FALSE(parsed.options.neg_ttl_s);
  CHECK(parsed.options.servers.empty());
  CHECK(parsed.options.resolv_file == "/etc/resolv.conf");
  CHECK(parsed.options.receiver_threads == ReceiverThreads::kAuto);
  CHECK(parsed.options.upstream_0x20 == upstream::Dns0x20::kAuto);
}

TEST_CASE("--prometheus-addr sets the metrics address; its old name still does, with a warning",
          "[frontend][options]") {
  Parsed now = Parse({"--prometheus-addr=127.0.0.1"});
  REQUIRE(now.ok);
  CHECK(now.options.prometheus_address == *IpAddress::Parse("127.0.0.1"));
  CHECK(now.options.warnings.empty());
  Parsed old = Parse({"--prometheus-address=127.0.0.2", "--prometheus-address=127.0.0.3"});
  REQUIRE(old.ok);
  CHECK(old.options.prometheus_address == *IpAddress::Parse("127.0.0.3"));
  CHECK(old.options.warnings ==  // once, however often it is given
        std::vector<std::string>{"--prometheus-address is deprecated: it is --prometheus-addr"});
}

TEST_CASE("dnsmasq's --use-stale-cache is taken, with a warning saying how stale answers differ",
          "[frontend][options]") {
  Parsed plain = Parse({"--use-stale-cache"});
  REQUIRE(plain.ok);
  CHECK(plain.options.stale_max_s == 86400);
  REQUIRE(plain.options.warnings.size() == 1);
  CHECK(
      plain.options.warnings[0].starts_with("--use-stale-cache: expired answers are served only"));
  Parsed capped = Parse({"--use-stale-cache=600"});
  REQUIRE(capped.ok);
  CHECK(capped.options.stale_max_s == 600);
  CHECK(capped.rest.empty());
  Parsed bad = Parse({"--use-stale-cache=soon"});
  CHECK_FALSE(bad.ok);
  CHECK(bad.error == "--use-stale-cache: \"soon\" is not a number of seconds");
}

TEST_CASE("The flag table lists every option and every refused dnsmasq option",
          "[frontend][options]") {
  const std::string lines = FlagTableLines();
  CHECK(lines.find("option\tserver\tS\tvalue\n") != std::string::npos);
  CHECK(lines.find("option\tno-negcache\tN\tflag\n") != std::string::npos);
  CHECK(lines.find("option\tlog-queries\tq\toptional\n") != std::string::npos);
  CHECK(lines.find("refused\tcname\t-\trecords other than") != std::string::npos);
}

TEST_CASE("--upstream-0x20 takes auto, on and off", "[frontend][options]") {
  CHECK(Parse({"--upstream-0x20=off"}).options.upstream_0x20 == upstream::Dns0x20::kOff);
  CHECK(Parse({"--upstream-0x20", "on"}).options.upstream_0x20 == upstream::Dns0x20::kOn);
  CHECK(Parse({"--upstream-0x20=auto"}).options.upstream_0x20 == upstream::Dns0x20::kAuto);
}

TEST_CASE("--loadbalance takes round_robin and off, round_robin by default as dnsmasq's cache",
          "[frontend][options]") {
  CHECK(Parse({}).options.loadbalance == dns::LoadBalance::kRoundRobin);
  CHECK(Parse({"--loadbalance=off"}).options.loadbalance == dns::LoadBalance::kOff);
  CHECK(Parse({"--loadbalance", "round_robin"}).options.loadbalance ==
        dns::LoadBalance::kRoundRobin);
  // dnsmasq's own switch for the same thing.
  CHECK(Parse({"--no-round-robin"}).options.loadbalance == dns::LoadBalance::kOff);
  CHECK(Parse({"--loadbalance=random"}).error ==
        "--loadbalance: \"random\" is not round_robin or off");
}

TEST_CASE("--tls-ca-file must name a CA bundle that loads", "[frontend][options]") {
  CHECK(Parse({}).options.tls_ca_file.empty());  // the system's CA bundle
  const Parsed missing = Parse({"--tls-ca-file=/nonexistent/ca.pem"});
  CHECK_FALSE(missing.ok);
  CHECK(missing.error.starts_with("--tls-ca-file: /nonexistent/ca.pem: "));
  CHECK_FALSE(Parse({"--tls-ca-file="}).ok);
}

TEST_CASE("--metrics-compat takes none and coredns, none by default", "[frontend][options]") {
  CHECK(Parse({}).options.metrics_compat == metrics::MetricsCompat::kNone);
  CHECK(Parse({"--metrics-compat=coredns"}).options.metrics_compat ==
        metrics::MetricsCompat::kCoredns);
  CHECK(Parse({"--metrics-compat", "none"}).options.metrics_compat ==
        metrics::MetricsCompat::kNone);
}

TEST_CASE("--receiver-threads takes auto, on and off", "[frontend][options]") {
  CHECK(Parse({"--receiver-threads=on"}).options.receiver_threads == ReceiverThreads::kOn);
  CHECK(Parse({"--receiver-threads", "off"}).options.receiver_threads == ReceiverThreads::kOff);
  CHECK(Parse({"--receiver-threads=auto"}).options.receiver_threads == ReceiverThreads::kAuto);
}

TEST_CASE("The kube-dns manifest's dnsmasq arguments parse", "[frontend][options]") {
  Parsed parsed =
      Parse({"-k", "--cache-size=1000", "--no-negcache", "--dns-loop-detect", "--log-facility=-",
             "--server=/cluster.local/127.0.0.1#10053", "--server=/in-addr.arpa/127.0.0.1#10053",
             "--server=/ip6.arpa/127.0.0.1#10053"});
  REQUIRE(parsed.ok);
  const Options& options = parsed.options;
  CHECK(options.keep_in_foreground);
  CHECK(options.cache_size == 1000);
  CHECK(options.no_negcache);
  CHECK(options.dns_loop_detect);
  CHECK(options.log_facility == "-");
  REQUIRE(options.servers.size() == 3);
  CHECK(options.servers[0].domains == std::vector{N("cluster.local.")});
  CHECK(options.servers[0].upstream == Up("127.0.0.1", 10053));
  CHECK(parsed.rest.empty());
}

TEST_CASE("Options take --opt=value, --opt value and dnsmasq's short forms",
          "[frontend][options]") {
  auto [args, check] = GENERATE(table<std::vector<std::string_view>, uint32_t>({
      {{"--cache-size=10"}, 10},
      {{"--cache-size", "10"}, 10},
      {{"-c", "10"}, 10},
      {{"-c10"}, 10},
      {{"--cache-size=0"}, 0},
  }));
  Parsed parsed = Parse(args);
  REQUIRE(parsed.ok);
  CHECK(parsed.options.cache_size == check);
}

TEST_CASE("Every option is read", "[frontend][options]") {
  Parsed parsed = Parse({"--neg-ttl=30",
                         "--no-resolv",
                         "--resolv-file",
                         "/tmp/r.conf",
                         "--dns-forward-max=500",
                         "--listen-address=127.0.0.1,::1",
                         "-a",
                         "10.0.0.1",
                         "--port=5353",
                         "--threads=4",
                         "--max-cache-ttl=600",
                         "--min-cache-ttl=5",
                         "--cache-bytes=2097152",
                         "--cache-entry-max-bytes=4096",
                         "--stale-max=0",
                         "--lameduck=2s",
                         "--prometheus-port=9153",
                         "--prometheus-reuseport",
                         "--debug-address=127.0.0.1:10057",
                         "-S",
                         "8.8.8.8",
                         "-N",
                         "-R"});
  REQUIRE(parsed.ok);
  const Options& options = parsed.options;
  CHECK(options.neg_ttl_s == 30u);
  CHECK(options.no_resolv);
  CHECK(options.resolv_file == "/tmp/r.conf");
  CHECK(options.dns_forward_max == 500);
  CHECK(options.listen_addresses == std::vector{*IpAddress::Parse("127.0.0.1"),
                                                *IpAddress::Parse("::1"),
                                                *IpAddress::Parse("10.0.0.1")});
  CHECK(options.port == 5353);
  CHECK(options.threads == 4);
  CHECK(options.max_cache_ttl_s == 600u);
  CHECK(options.min_cache_ttl_s == 5);
  CHECK(options.cache_bytes == 2097152);
  CHECK(options.cache_entry_max_bytes == 4096);
  CHECK(options.stale_max_s == 0);
  CHECK(options.lameduck_ms == 2000);
  CHECK(options.prometheus_port == 9153);
  CHECK(options.prometheus_reuse_port);
  CHECK_FALSE(Parse({}).options.prometheus_reuse_port);  // a pod's port is its own
  REQUIRE(options.debug_address.has_value());
  CHECK(options.debug_address->ToString() == "127.0.0.1:10057");
  CHECK_FALSE(Parse({}).options.debug_address.has_value());  // off by default
  REQUIRE(options.servers.size() == 1);
  CHECK(options.servers[0].upstream == Up("8.8.8.8"));
  CHECK(options.no_negcache);

  CHECK(Parse({"--lameduck=7"}).options.lameduck_ms == 7000);
  CHECK(Parse({"--min-cache-ttl=86400"}).options.min_cache_ttl_s == kMinCacheTtlLimitS);
}

TEST_CASE("Unknown arguments are left for gflags, in order", "[frontend][options]") {
  Parsed parsed = Parse(
      {"--v=2", "-k", "--logtostderr", "-kubecfg", "x", "--cache-size=5", "--", "--cache-size=9"});
  REQUIRE(parsed.ok);
  CHECK(parsed.options.cache_size == 5);
  CHECK(parsed.rest == std::vector<std::string>{"--v=2", "--logtostderr", "-kubecfg", "x", "--",
                                                "--cache-size=9"});
}

TEST_CASE("The forwarding budgets are read under --dns-forward-max", "[frontend][options]") {
  Parsed parsed = Parse({"--dns-forward-max=500", "--forward-max-per-route=100",
                         "--forward-max-per-upstream", "50", "--forward-client-reserve=0"});
  REQUIRE(parsed.ok);
  CHECK(parsed.options.dns_forward_max == 500);
  CHECK(parsed.options.forward_max_per_route == 100);
  CHECK(parsed.options.forward_max_per_upstream == 50);
  CHECK(parsed.options.forward_client_reserve == 0);
}

TEST_CASE("Malformed options fail with one line naming the option", "[frontend][options]") {
  auto [args, expected] = GENERATE(table<std::vector<std::string_view>, std::string>({
      {{"--cache-size=abc"}, "--cache-size: \"abc\" is not a number in 0..1000000"},
      {{"--cache-size=-1"}, "--cache-size: \"-1\" is not a number in 0..1000000"},
      {{"--cache-size=2000000"}, "--cache-size: \"2000000\" is not a number in 0..1000000"},
      {{"--cache-size"}, "--cache-size needs a value"},
      {{"-c"}, "-c needs a value"},
      {{"--no-negcache=yes"}, "--no-negcache takes no value"},
      {{"--no-resolv=1"}, "--no-resolv takes no value"},
      {{"--dns-loop-detect=1"}, "--dns-loop-detect takes no value"},
      {{"--neg-ttl=1h"}, "--neg-ttl: \"1h\" is not a number of seconds in 0..4294967295"},
      {{"--neg-ttl="}, "--neg-ttl: \"\" is not a number of seconds in 0..4294967295"},
      {{"--log-facility="}, "--log-facility: empty value (use - for stderr)"},
      {{"--resolv-file="}, "--resolv-file: empty path"},
      {{"--dns-forward-max=0"}, "--dns-forward-max: \"0\" is not a number in 1..1000000"},
      {{"--forward-max-per-route=x"},
       "--forward-max-per-route: \"x\" is not a number in 0..1000000"},
      {{"--dns-forward-max=100", "--forward-max-per-upstream=101"},
       "--forward-max-per-upstream (101) is above --dns-forward-max (100)"},
      {{"--forward-client-reserve=51"},
       "--forward-client-reserve: \"51\" is not a number in 0..50"},
      {{"--forward-client-reserve=10%"},
       "--forward-client-reserve: \"10%\" is not a number in 0..50"},
      {{"--listen-address=localhost"}, "--listen-address: \"localhost\" is not an IP address"},
      {{"--listen-address=1.2.3.4,"}, "--listen-address: \"\" is not an IP address"},
      {{"--port=65536"}, "--port: \"65536\" is not a number in 0..65535"},
      {{"-p", "x"}, "--port: \"x\" is not a number in 0..65535"},
      {{"--threads=2000"}, "--threads: \"2000\" is not a number in 0..1024"},
      {{"--receiver-threads=yes"}, "--receiver-threads: \"yes\" is not auto, on or off"},
      {{"--upstream-0x20=yes"}, "--upstream-0x20: \"yes\" is not auto, on or off"},
      {{"--upstream-0x20="}, "--upstream-0x20: \"\" is not auto, on or off"},
      {{"--metrics-compat=prometheus"}, "--metrics-compat: \"prometheus\" is not none or coredns"},
      {{"--max-cache-ttl=x"}, "--max-cache-ttl: \"x\" is not a number of seconds in 0..4294967295"},
      {{"--min-cache-ttl=x"}, "--min-cache-ttl: \"x\" is not a number in 0..4294967295"},
      {{"--max-cache-ttl=10", "--min-cache-ttl=20"},
       "--min-cache-ttl (20) is above --max-cache-ttl (10)"},
      {{"--cache-bytes=1000"}, "--cache-bytes: \"1000\" is not a number in 1048576..1099511627776"},
      {{"--cache-entry-max-bytes=65536"},
       "--cache-entry-max-bytes: \"65536\" is not a number in 512..65535"},
      {{"--stale-max=1d"}, "--stale-max: \"1d\" is not a number in 0..4294967295"},
      {{"--lameduck=soon"}, "--lameduck: \"soon\" is not a duration (e.g. 5s, 500ms, or seconds)"},
      {{"--prometheus-port=99999"}, "--prometheus-port: \"99999\" is not a number in 0..65535"},
      {{"--prometheus-addr=any"}, "--prometheus-addr: \"any\" is not an IP address"},
      {{"--prometheus-address=any"}, "--prometheus-address: \"any\" is not an IP address"},
      {{"--debug-address=10057"},
       "--debug-address: not an IP address and port (127.0.0.1:10057): \"10057\""},
      {{"--prometheus-port=10056", "--debug-address=127.0.0.1:10056"},
       "--debug-address=127.0.0.1:10056 takes the port of --prometheus-port (0.0.0.0:10056): "
       "the debug data needs a port of its own"},
      {{"--debug-address=localhost:10057"},
       "--debug-address: not an IP address and port (127.0.0.1:10057): \"localhost:10057\""},
      {{"--server="}, "--server=: empty value"},
      {{"--server=1.2.3"}, "--server=1.2.3: \"1.2.3\" is not an IP address"},
      {{"--server=1.2.3.4#0"}, "--server=1.2.3.4#0: bad port \"0\" in \"1.2.3.4#0\" (1..65535)"},
      {{"--server=1.2.3.4#x"}, "--server=1.2.3.4#x: bad port \"x\" in \"1.2.3.4#x\" (1..65535)"},
      {{"--server=1.2.3.4#53@eth0"},
       "--server=1.2.3.4#53@eth0: source address or interface ('@') is not supported in "
       "\"1.2.3.4#53@eth0\""},
      {{"--server=[fd00::1"}, "--server=[fd00::1: missing ']' in \"[fd00::1\""},
      {{"--server=[fd00::1]53"},
       "--server=[fd00::1]53: expected '#port' after ']' in \"[fd00::1]53\""},
      {{"--server=/cluster.local"}, "--server=/cluster.local: missing '/' after the domain"},
      {{"--server=//1.2.3.4"},
       "--server=//1.2.3.4: empty domain (dnsmasq's // for unqualified names is not supported)"},
      {{"--server=/a//b/1.2.3.4"},
       "--server=/a//b/1.2.3.4: empty domain (dnsmasq's // for unqualified names is not "
       "supported)"},
      {{"--server=/*.example/1.2.3.4"},
       "--server=/*.example/1.2.3.4: wildcard domain \"*.example\" is not supported"},
      {{"--server=/a..b/1.2.3.4"}, "--server=/a..b/1.2.3.4: bad domain \"a..b\""},
      {{"--server=/example/host.name"},
       "--server=/example/host.name: \"host.name\" is not an IP address"},
  }));
  Parsed parsed = Parse(args);
  CHECK_FALSE(parsed.ok);
  CHECK(parsed.error == expected);
}

TEST_CASE("Cache options follow the flags", "[frontend][options]") {
  Parsed parsed = Parse({"--cache-size=10", "--no-negcache", "--neg-ttl=0", "--max-cache-ttl=9"});
  REQUIRE(parsed.ok);
  CacheOptions cache = ToCacheOptions(parsed.options);
  CHECK(cache.capacity == 10);
  CHECK_FALSE(cache.policy.negative_caching);
  CHECK_FALSE(cache.policy.neg_ttl_s);  // 0 is unset
  CHECK(cache.policy.max_ttl_s == 9u);
  CHECK(ToCacheOptions(Parse({"--neg-ttl=60"}).options).policy.neg_ttl_s == 60u);
  // --serial-zones' negative answers are exact: cached even under --no-negcache.
  CHECK(ToCacheOptions(Parse({"--no-negcache", "--serial-zones=cluster.local"}).options)
            .policy.exact_negative_zones == std::vector{N("cluster.local.")});
}

TEST_CASE("The cache is bounded by default: TTLs, bytes and entry size", "[frontend][options]") {
  const CacheOptions cache = ToCacheOptions(Parse({}).options);
  CHECK(cache.policy.max_ttl_s == kDefaultMaxCacheTtlS);
  CHECK(cache.max_bytes == kDefaultCacheBytes);
  CHECK(cache.max_entry_bytes == kDefaultCacheEntryMaxBytes);
  // --max-cache-ttl=0 is dnsmasq's "no cap", and so allows any --min-cache-ttl.
  Parsed parsed = Parse({"--max-cache-ttl=0", "--min-cache-ttl=60"});
  REQUIRE(parsed.ok);
  CHECK_FALSE(ToCacheOptions(parsed.options).policy.max_ttl_s);
  parsed = Parse({"--cache-bytes=1048576", "--cache-entry-max-bytes=512"});
  REQUIRE(parsed.ok);
  CHECK(ToCacheOptions(parsed.options).max_bytes == 1048576);
  CHECK(ToCacheOptions(parsed.options).max_entry_bytes == 512);
}

}  // namespace
}  // namespace kdns::frontend

namespace kdns::frontend {

TEST_CASE("--max-waiting-queries bounds the waiting queries, 10000 by default",
          "[frontend][options][waiting]") {
  CHECK(Parse({}).options.max_waiting_queries == 10'000u);
  CHECK(Parse({"--max-waiting-queries=500"}).options.max_waiting_queries == 500u);
  CHECK(Parse({"--max-waiting-queries=0"}).error ==
        "--max-waiting-queries: \"0\" is not a number in 1..1000000");
}

TEST_CASE("the per-client rate limit and RRL flags, checked where both servers check them",
          "[frontend][options][rate]") {
  const server::RateLimitFlags defaults = Parse({}).options.rate_limits;
  CHECK(defaults.client_rate_limit == 0);
  CHECK(defaults.client_rate_slip == 2);
  CHECK(defaults.client_rate_prefix_v4 == 32);
  CHECK(defaults.client_rate_prefix_v6 == 64);
  CHECK(defaults.rrl_responses_per_second == 0);
  const Parsed set =
      Parse({"--client-rate-limit=5000", "--client-rate-burst=9000", "--client-rate-prefix-v4=28",
             "--client-rate-prefix-v6=56", "--client-rate-slip=0",
             "--client-rate-exempt=127.0.0.0/8,::1", "--rrl-responses-per-second=20"});
  REQUIRE(set.error.empty());
  CHECK(set.options.rate_limits.client_rate_limit == 5000);
  CHECK(set.options.rate_limits.client_rate_burst == 9000);
  CHECK(set.options.rate_limits.client_rate_prefix_v4 == 28);
  CHECK(set.options.rate_limits.client_rate_prefix_v6 == 56);
  CHECK(set.options.rate_limits.client_rate_slip == 0);
  CHECK(set.options.rate_limits.client_rate_exempt == "127.0.0.0/8,::1");
  CHECK(set.options.rate_limits.rrl_responses_per_second == 20);
  CHECK(Parse({"--client-rate-limit=fast"}).error ==
        "--client-rate-limit: \"fast\" is not a number in 0..9223372036854775807");
  CHECK(Parse({"--client-rate-prefix-v4=33"}).error == "--client-rate-prefix-v4=33: must be 1..32");
  CHECK(Parse({"--client-rate-exempt=10.0.0.1/8"})
            .error.starts_with("--client-rate-exempt: \"10.0.0.1/8\" is not an address prefix"));
}

TEST_CASE("the client address goes to loopback upstreams by default, the flags checked",
          "[frontend][options][client_address]") {
  const Options defaults = Parse({}).options;
  CHECK(defaults.client_address_to ==
        std::vector<IpPrefix>{*IpPrefix::Parse("127.0.0.0/8"), *IpPrefix::Parse("::1/128")});
  CHECK(defaults.client_address_option == 65432);
  const Parsed set =
      Parse({"--client-address-to=10.96.0.10,127.0.0.1", "--client-address-option=65001"});
  REQUIRE(set.error.empty());
  CHECK(set.options.client_address_to ==
        std::vector<IpPrefix>{*IpPrefix::Parse("10.96.0.10"), *IpPrefix::Parse("127.0.0.1")});
  CHECK(set.options.client_address_option == 65001);
  CHECK(Parse({"--client-address-to="}).options.client_address_to.empty());  // to none
  CHECK(Parse({"--client-address-to=kubedns"})
            .error.starts_with("--client-address-to: \"kubedns\" is not an address prefix"));
  CHECK(Parse({"--client-address-option=8"}).error ==
        "--client-address-option: \"8\" is not a number in 65001..65534");
}

TEST_CASE("NOTIFY is taken from loopback and no zone is polled by default, the flags checked",
          "[frontend][options][notify]") {
  const Options defaults = Parse({}).options;
  CHECK(defaults.notify_from ==
        std::vector<IpPrefix>{*IpPrefix::Parse("127.0.0.0/8"), *IpPrefix::Parse("::1/128")});
  CHECK(defaults.serial_zones.empty());
  CHECK(defaults.serial_poll_ms == 1000);
  const Parsed set = Parse({"--notify-from=10.0.0.0/8",
                            "--serial-zones=Cluster.Local,in-addr.arpa.", "--serial-poll=250ms"});
  REQUIRE(set.error.empty());
  CHECK(set.options.notify_from == std::vector<IpPrefix>{*IpPrefix::Parse("10.0.0.0/8")});
  REQUIRE(set.options.serial_zones.size() == 2);
  CHECK(set.options.serial_zones[0].ToText() == "cluster.local.");  // lower-cased
  CHECK(set.options.serial_zones[1].ToText() == "in-addr.arpa.");
  CHECK(set.options.serial_poll_ms == 250);
  CHECK(Parse({"--serial-poll=0"}).options.serial_poll_ms == 0);  // no polling
  CHECK(Parse({"--notify-from="}).options.notify_from.empty());   // from no one
  CHECK(Parse({"--notify-from=kubedns"})
            .error.starts_with("--notify-from: \"kubedns\" is not an address prefix"));
  CHECK(Parse({"--serial-zones=cluster.local,,x"}).error == "--serial-zones: \"\" is not a domain");
  CHECK(
      Parse({"--serial-poll=soon"}).error.starts_with("--serial-poll: \"soon\" is not a duration"));
}

}  // namespace kdns::frontend

namespace kdns::frontend {
namespace {

TEST_CASE("The DNS over TCP limits default to server::TcpOptions' and each flag sets one",
          "[frontend][options]") {
  Parsed defaults = Parse({});
  REQUIRE(defaults.ok);
  const server::TcpOptions expected;
  CHECK(defaults.options.tcp.idle_timeout_ms == expected.idle_timeout_ms);
  CHECK(defaults.options.tcp.query_timeout_ms == expected.query_timeout_ms);
  CHECK(defaults.options.tcp.max_connections == expected.max_connections);
  Parsed parsed = Parse(
      {"--tcp-idle-timeout=5", "--tcp-frame-timeout=500ms", "--tcp-query-timeout=1500ms",
       "--tcp-max-connections=100", "--tcp-max-connections-per-source", "10",
       "--tcp-max-output-bytes-per-connection=70000", "--tcp-max-output-bytes-total=1000000"});
  REQUIRE(parsed.ok);
  CHECK(parsed.rest.empty());
  const server::TcpOptions& tcp = parsed.options.tcp;
  CHECK(tcp.idle_timeout_ms == 5000);
  CHECK(tcp.frame_timeout_ms == 500);
  CHECK(tcp.query_timeout_ms == 1500);
  CHECK(tcp.max_connections == 100);
  CHECK(tcp.max_connections_per_source == 10);
  CHECK(tcp.max_pending_output_bytes == 70000);
  CHECK(tcp.max_pending_output_bytes_total == 1000000);
}

TEST_CASE("Bad DNS over TCP limits are one line naming the flag", "[frontend][options]") {
  auto [args, error] = GENERATE(table<std::vector<std::string_view>, std::string>({
      {{"--tcp-frame-timeout=soon"},
       "--tcp-frame-timeout: \"soon\" is not a duration (e.g. 2s, 500ms, or seconds)"},
      {{"--tcp-query-timeout=-1s"},
       "--tcp-query-timeout: \"-1s\" is not a duration (e.g. 5s, 500ms, or seconds)"},
      {{"--tcp-max-connections=0"}, "--tcp-max-connections: \"0\" is not a number in 1..1000000"},
      {{"--tcp-max-output-bytes-per-connection=1000"},
       "--tcp-max-output-bytes-per-connection: \"1000\" is not a number in 65537..1073741824"},
  }));
  Parsed parsed = Parse(args);
  CHECK_FALSE(parsed.ok);
  CHECK(parsed.error == error);
}

}  // namespace
}  // namespace kdns::frontend

namespace kdns::frontend {
namespace {

TEST_CASE("The dnsmasq options of kube-dns Deployments in the wild are read",
          "[frontend][options]") {
  Parsed parsed = Parse({"--log-queries",
                         "--address=/ads.test/192.0.2.1",
                         "-A",
                         "/null.test/#",
                         "--address=/nx.test/",
                         "--addn-hosts=/etc/extra-hosts",
                         "-H",
                         "/h2",
                         "--no-hosts",
                         "--local=/corp.test/",
                         "--local=/up.test/10.0.0.1",
                         "--domain-needed",
                         "--bogus-priv",
                         "--strict-order",
                         "--all-servers",
                         "--local-ttl=30",
                         "--filter-AAAA",
                         "--user=nobody",
                         "--bind-interfaces",
                         "--interface=lo,eth0",
                         "--no-daemon",
                         "--no-poll"});
  INFO(parsed.error);
  REQUIRE(parsed.ok);
  CHECK(parsed.rest.empty());
  const Options& o = parsed.options;
  CHECK(o.log_queries.detail == server::QueryLogOptions::Detail::kBasic);
  REQUIRE(o.addresses.size() == 2);
  CHECK(o.addresses[0] == AddressOption{{N("ads.test")}, {*IpAddress::Parse("192.0.2.1")}});
  CHECK(o.addresses[1] ==
        AddressOption{{N("null.test")}, {*IpAddress::Parse("0.0.0.0"), *IpAddress::Parse("::")}});
  // --address=/nx.test/ and --local=/corp.test/ are --server=/domain/ (local NXDOMAIN);
  // --local with an address is --server.
  REQUIRE(o.servers.size() == 3);
  CHECK(o.servers[0].domains == std::vector<dns::Name>{N("nx.test")});
  CHECK(o.servers[0].target == ServerOption::Target::kLocal);
  CHECK(o.servers[1].target == ServerOption::Target::kLocal);
  CHECK(o.servers[2].target == ServerOption::Target::kUpstream);
  CHECK(o.servers[2].upstream == Up("10.0.0.1"));
  CHECK(o.addn_hosts == std::vector<std::string>{"/etc/extra-hosts", "/h2"});
  CHECK(o.no_hosts);
  CHECK(o.domain_needed);
  CHECK(o.bogus_priv);
  CHECK(o.strict_order);
  CHECK(o.all_servers);
  CHECK(o.local_ttl_s == 30);
  CHECK(o.filter_aaaa);
  CHECK(o.user == "nobody");
  CHECK(o.bind_interfaces);
  CHECK(o.interfaces == std::vector<std::string>{"lo", "eth0"});
  CHECK(o.keep_in_foreground);
  CHECK(o.no_poll);
}

TEST_CASE("The new options' short forms are dnsmasq's", "[frontend][options]") {
  Parsed parsed = Parse({"-q", "-q", "-h", "-D", "-b", "-o", "-T", "5", "-u", "nobody", "-z", "-i",
                         "lo", "-d", "-n", "-H/h"});
  INFO(parsed.error);
  REQUIRE(parsed.ok);
  CHECK(parsed.rest.empty());
  // -q twice is dnsmasq's --log-queries=extra.
  CHECK(parsed.options.log_queries.detail == server::QueryLogOptions::Detail::kExtra);
  CHECK(parsed.options.no_hosts);
  CHECK(parsed.options.domain_needed);
  CHECK(parsed.options.bogus_priv);
  CHECK(parsed.options.strict_order);
  CHECK(parsed.options.local_ttl_s == 5);
  CHECK(parsed.options.user == "nobody");
  CHECK(parsed.options.bind_interfaces);
  CHECK(parsed.options.interfaces == std::vector<std::string>{"lo"});
  CHECK(parsed.options.keep_in_foreground);
  CHECK(parsed.options.no_poll);
  CHECK(parsed.options.addn_hosts == std::vector<std::string>{"/h"});
}

TEST_CASE("--log-queries takes extra and our rate and sampling", "[frontend][options]") {
  CHECK(Parse({}).options.log_queries.detail == server::QueryLogOptions::Detail::kOff);
  Parsed parsed =
      Parse({"--log-queries=extra", "--log-queries-rate=50", "--log-queries-sample", "10"});
  REQUIRE(parsed.ok);
  CHECK(parsed.options.log_queries.detail == server::QueryLogOptions::Detail::kExtra);
  CHECK(parsed.options.log_queries.max_lines_per_second == 50);
  CHECK(parsed.options.log_queries.sample_one_in == 10);
  // The default bounds a flood (docs/operators.md, "Query logging").
  CHECK(Parse({"-q"}).options.log_queries.max_lines_per_second == 100);
  CHECK(Parse({"-q"}).options.log_queries.sample_one_in == 1);
}

TEST_CASE("--address=/#/ answers every name", "[frontend][options]") {
  Parsed parsed = Parse({"--address=/#/192.0.2.9"});
  REQUIRE(parsed.ok);
  REQUIRE(parsed.options.addresses.size() == 1);
  CHECK(parsed.options.addresses[0].domains == std::vector<dns::Name>{dns::Name::Root()});
}

TEST_CASE("Bad values of the new options fail with one line naming the option",
          "[frontend][options]") {
  auto [args, expected] = GENERATE(table<std::vector<std::string_view>, std::string>({
      {{"--address=1.2.3.4"}, "--address=1.2.3.4: expected /domain/[address]"},
      {{"--address=/a.test"}, "--address=/a.test: missing '/' after the domain"},
      {{"--address=/a.test/host"}, "--address=/a.test/host: \"host\" is not an IP address"},
      {{"--address=/*.a.test/1.2.3.4"}, "--address=/*.a.test/1.2.3.4: bad domain \"*.a.test\""},
      {{"--address=//1.2.3.4"}, "--address=//1.2.3.4: bad domain \"\""},
      {{"--local=/a.test/x"}, "--local=/a.test/x: \"x\" is not an IP address"},
      {{"--addn-hosts="}, "--addn-hosts: empty path"},
      {{"--local-ttl=x"}, "--local-ttl: \"x\" is not a number of seconds in 0..4294967295"},
      {{"--filter-AAAA=1"}, "--filter-AAAA takes no value"},
      {{"--user="}, "--user: empty user name"},
      {{"--interface=eth*"},
       "--interface: \"eth*\" is not an interface name (wildcards are not supported)"},
      {{"--log-queries=lots"}, "--log-queries: \"lots\" is not extra, proto or auth (or nothing)"},
      {{"--log-queries-rate=x"},
       "--log-queries-rate: \"x\" is not a number of lines a second in 0..1000000"},
      {{"--log-queries-sample=0"},
       "--log-queries-sample: \"0\" is not a number in 1..1000000 (log one query in N)"},
  }));
  Parsed parsed = Parse(args);
  CHECK_FALSE(parsed.ok);
  CHECK(parsed.error == expected);
}

TEST_CASE("dnsmasq options frontend-cache refuses stop it with one line saying what to do",
          "[frontend][options]") {
  auto [arg, option] = GENERATE(table<std::string_view, std::string>({
      {"--conf-file=/etc/dnsmasq.conf", "--conf-file"},
      {"-C", "--conf-file"},
      {"--dhcp-range=10.0.0.1,10.0.0.9", "--dhcp-range"},
      {"--cname=a.test,b.test", "--cname"},
      {"--srv-host=_x._tcp.test", "--srv-host"},
      {"--expand-hosts", "--expand-hosts"},
      {"--dnssec", "--dnssec"},
      {"--stop-dns-rebind", "--stop-dns-rebind"},
      {"--query-port=53", "--query-port"},
      {"--edns-packet-max=4096", "--edns-packet-max"},
      {"--filter-A", "--filter-A"},
      {"--bogus-nxdomain=1.2.3.4", "--bogus-nxdomain"},
  }));
  Parsed parsed = Parse({arg});
  CHECK_FALSE(parsed.ok);
  CHECK(parsed.error.starts_with(option + " (dnsmasq) is not supported by frontend-cache: "));
  CHECK(parsed.error.find('\n') == std::string::npos);
  CHECK(RefusedOptionReason("log-queries").empty());
  CHECK(RefusedOptionReason("v").empty());  // gflags' --v
}

}  // namespace
TEST_CASE("hosts files are checked for changes every 5 s by default, 0 leaving it to SIGHUP",
          "[frontend][options][hosts]") {
  CHECK(Parse({}).options.hosts_reload_ms == 5000);  // CoreDNS's hosts `reload`
  CHECK(Parse({"--hosts-reload=30s"}).options.hosts_reload_ms == 30000);
  CHECK(Parse({"--hosts-reload=0"}).options.hosts_reload_ms == 0);
  CHECK(Parse({"--hosts-reload=often"})
            .error.starts_with("--hosts-reload: \"often\" is not a duration"));
}

}  // namespace kdns::frontend

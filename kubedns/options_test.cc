// Tests of kubedns's options (kubedns/options.h): its flags and environment built into the
// server's options, kube-dns's defaults, and each bad flag refused in one line naming it.
// kube-dns's old flags have their own options_compat_test.cc.

#include "kubedns/options.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/k8s/testing.h"
#include "kubedns/options_testing.h"

namespace kdns::kubedns {
namespace {

using k8s::testing::Env;
using testing::ErrorOf;
using testing::Offline;

TEST_CASE("kubedns's default flags build kube-dns's defaults", "[kubedns][options]") {
  Options options;
  std::string error;
  REQUIRE(BuildOptions(Offline(), Env({}), &options, &error));
  const KubednsServer::Options& server = options.server;
  CHECK(server.answer.zone.ToText() == "cluster.local.");
  CHECK(server.answer.ttl_s == 30);
  CHECK(server.answer.pod_records == PodRecords::kInsecure);
  CHECK(server.dns_address.ToString() == "0.0.0.0:10053");
  CHECK(server.healthz_address.ToString() == "0.0.0.0:8081");
  CHECK(server.metrics_address.ToString() == "0.0.0.0:10055");
  CHECK_FALSE(server.debug_address.has_value());  // debug data only when asked for
  CHECK(server.dns_threads == 0);
  CHECK(server.forwarder.dns0x20.mode == upstream::Dns0x20::kAuto);
  CHECK(server.receiver_threads);  // auto: on
  CHECK(server.config_period_ms == 10'000);
  CHECK(server.resolv_conf == "/etc/resolv.conf");
  CHECK(server.forwarder.budgets->process().max() == 4096);
  CHECK(server.forwarder.budgets->max_per_route() == 1024);
  CHECK(server.forwarder.budgets->max_per_upstream() == 1024);
  CHECK(server.forwarder.budgets->client_reserve_percent() == 10);
  CHECK(server.nameservers.empty());
  CHECK(server.notify_targets.empty());        // no NOTIFY unless asked for
  CHECK_FALSE(server.api_config.has_value());  // the objects file is the source
  CHECK(options.initial_sync_timeout_ms == 60'000);
  CHECK(options.lameduck_ms == 0);
}

TEST_CASE("--loadbalance is off by default, as kube-dns's kubedns, and takes round_robin",
          "[kubedns][options]") {
  Options options;
  std::string error;
  REQUIRE(BuildOptions(Offline(), Env({}), &options, &error));
  CHECK(options.server.loadbalance == dns::LoadBalance::kOff);
  FlagValues flags = Offline();
  flags.loadbalance = "round_robin";
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.loadbalance == dns::LoadBalance::kRoundRobin);
  flags.loadbalance = "weighted";
  CHECK(ErrorOf(flags) == "--loadbalance: \"weighted\" is not round_robin or off");
}

TEST_CASE("kubedns's flags reach the server's options", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.domain = "example.org";  // the final dot is added
  flags.dns_port = 53;
  flags.dns_bind_address = "127.0.0.1";
  flags.http_bind_address = "::1";
  flags.ttl = 5;
  flags.pod_records = "verified";
  flags.nameservers = "192.0.2.1,192.0.2.2:5353";
  flags.notify = "127.0.0.1,[::1]:5353";
  flags.forward_max = 7;
  flags.forward_max_per_route = 3;
  flags.forward_max_per_upstream = 2;
  flags.forward_client_reserve = 25;
  flags.lameduck = "2s";
  flags.debug_address = "127.0.0.1:10057";
  flags.receiver_threads = "off";
  flags.upstream_0x20 = "off";
  flags.metrics_compat = "coredns";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.answer.zone.ToText() == "example.org.");
  CHECK(options.server.dns_address.ToString() == "127.0.0.1:53");
  CHECK(options.server.metrics_compat == metrics::MetricsCompat::kCoredns);
  CHECK(options.server.healthz_address.ToString() == "[::1]:8081");
  CHECK(options.server.answer.ttl_s == 5);
  CHECK(options.server.answer.pod_records == PodRecords::kVerified);
  CHECK(options.server.api.watch_pods);
  REQUIRE(options.server.nameservers.size() == 2);
  CHECK(upstream::FormatUpstreamAddress(options.server.nameservers[1]) == "192.0.2.2#5353");
  REQUIRE(options.server.notify_targets.size() == 2);
  CHECK(options.server.notify_targets[0].ToString() == "127.0.0.1:53");
  CHECK(options.server.notify_targets[1].ToString() == "[::1]:5353");
  CHECK(options.server.forwarder.budgets->process().max() == 7);
  CHECK(options.server.forwarder.budgets->max_per_route() == 3);
  CHECK(options.server.forwarder.budgets->max_per_upstream() == 2);
  CHECK(options.server.forwarder.dns0x20.mode == upstream::Dns0x20::kOff);
  CHECK(options.server.forwarder.budgets->client_reserve_percent() == 25);
  CHECK(options.lameduck_ms == 2000);
  CHECK_FALSE(options.server.receiver_threads);
  REQUIRE(options.server.debug_address.has_value());
  CHECK(options.server.debug_address->ToString() == "127.0.0.1:10057");
  CHECK(options.warnings.empty());  // loopback
}

TEST_CASE("kubedns's metrics port comes from the flag, else $PROMETHEUS_PORT",
          "[kubedns][options]") {
  Options options;
  std::string error;
  REQUIRE(BuildOptions(Offline(), Env({{"PROMETHEUS_PORT", "9153"}}), &options, &error));
  CHECK(options.server.metrics_address.port() == 9153);
  FlagValues flags = Offline();
  flags.prometheus_port = 0;
  REQUIRE(BuildOptions(flags, Env({{"PROMETHEUS_PORT", "9153"}}), &options, &error));
  CHECK(options.server.metrics_address.port() == 0);
  CHECK(options.warnings.empty());
  REQUIRE_FALSE(BuildOptions(Offline(), Env({{"PROMETHEUS_PORT", "91x3"}}), &options, &error));
  CHECK(error == "PROMETHEUS_PORT: \"91x3\" is not a port (1..65535)");
}

TEST_CASE("Each bad kubedns flag is one line naming it", "[kubedns][options]") {
  FlagValues flags = Offline();
  std::string expected;
  SECTION("domain") {
    flags.domain = ".";
    expected = "--domain: not a domain name: \".\"";
  }
  SECTION("ttl") {
    flags.ttl = -1;
    expected = "--ttl: must not be negative";
  }
  SECTION("pod records") {
    flags.pod_records = "all";
    expected = "--pod-records: insecure, verified or disabled, not \"all\"";
  }
  SECTION("dns port") {
    flags.dns_port = 70000;
    expected = "--dns-port: not a port";
  }
  SECTION("dns address") {
    flags.dns_bind_address = "localhost";
    expected = "--dns-bind-address: not an IP address: \"localhost\"";
  }
  SECTION("threads") {
    flags.dns_threads = -2;
    expected = "--dns-threads: must not be negative";
  }
  SECTION("receiver threads") {
    flags.receiver_threads = "yes";
    expected = "--receiver-threads: \"yes\" is not auto, on or off";
  }
  SECTION("healthz port") {
    flags.healthz_port = -5;
    expected = "--healthz-port: not a port";
  }
  SECTION("metrics port") {
    flags.prometheus_port = 65536;
    expected = "--prometheus-port: not a port";
  }
  SECTION("metrics port by its old name") {
    flags.metrics_port = 65536;
    expected = "--metrics-port: not a port";
  }
  SECTION("http address") {
    flags.http_bind_address = "any";
    expected = "--http-bind-address: not an IP address: \"any\"";
  }
  SECTION("debug address") {
    flags.debug_address = "10057";
    expected = "--debug-address: not an IP address and port (127.0.0.1:10057): \"10057\"";
  }
  SECTION("debug address on the metrics port") {
    flags.debug_address = "127.0.0.1:10055";
    expected =
        "--debug-address=127.0.0.1:10055 takes the port of --prometheus-port (0.0.0.0:10055): the "
        "debug data needs a port of its own";
  }
  SECTION("debug address by its old name") {
    flags.cache_dump_address = "10057";
    expected = "--cache-dump-address: not an IP address and port (127.0.0.1:10057): \"10057\"";
  }
  SECTION("debug address by both names, differently") {
    flags.debug_address = "127.0.0.1:10057";
    flags.cache_dump_address = "127.0.0.1:10058";
    expected =
        "--cache-dump-address=127.0.0.1:10058 is the old name of "
        "--debug-address=127.0.0.1:10057: give one of them";
  }
  SECTION("config period") {
    flags.config_period = "10";
    expected = "--config-period: not a duration: \"10\"";
  }
  SECTION("config period zero") {
    flags.config_period = "0s";
    expected = "--config-period: must be positive";
  }
  SECTION("forward max") {
    flags.forward_max = 0;
    expected = "--forward-max: must be at least 1";
  }
  SECTION("forward max per route over the ceiling") {
    flags.forward_max = 100;
    flags.forward_max_per_route = 101;
    expected =
        "--forward-max-per-route: must be between 0 (a quarter of --forward-max) and "
        "--forward-max (100)";
  }
  SECTION("forward max per upstream negative") {
    flags.forward_max_per_upstream = -1;
    expected =
        "--forward-max-per-upstream: must be between 0 (a quarter of --forward-max) and "
        "--forward-max (4096)";
  }
  SECTION("0x20") {
    flags.upstream_0x20 = "yes";
    expected = "--upstream-0x20: \"yes\" is not auto, on or off";
  }
  SECTION("metrics compat") {
    flags.metrics_compat = "CoreDNS";
    expected = "--metrics-compat: \"CoreDNS\" is not none or coredns";
  }
  SECTION("forward client reserve over half") {
    flags.forward_client_reserve = 51;
    expected = "--forward-client-reserve: must be a percent between 0 (off) and 50";
  }
  SECTION("forward client reserve negative") {
    flags.forward_client_reserve = -1;
    expected = "--forward-client-reserve: must be a percent between 0 (off) and 50";
  }
  SECTION("lameduck") {
    flags.lameduck = "soon";
    expected = "--lameduck: not a duration: \"soon\"";
  }
  SECTION("initial sync timeout") {
    flags.initial_sync_timeout = "1 minute";
    expected = "--initial-sync-timeout: not a duration: \"1 minute\"";
  }
  CHECK(ErrorOf(flags) == expected);
}

TEST_CASE("kubedns refuses to forward to itself", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.nameservers = "127.0.0.1:10053";
  CHECK(ErrorOf(flags) == "--nameservers: 127.0.0.1:10053 is this kubedns itself");
  flags.nameservers = "127.0.0.1:53";  // another port: another server
  CHECK(ErrorOf(flags).empty());
  flags.nameservers = "not-an-ip";
  CHECK(ErrorOf(flags).starts_with("--nameservers: "));
}

TEST_CASE("a bad --notify target is refused with its name", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.notify = "127.0.0.1:53,frontend";
  CHECK(ErrorOf(flags).starts_with("--notify: "));
  CHECK(ErrorOf(flags).find("frontend") != std::string::npos);
}

TEST_CASE("--nameservers takes tcp:// upstreams; --notify does not", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.nameservers = "tcp://192.0.2.1:53,192.0.2.1";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  REQUIRE(options.server.nameservers.size() == 2);
  CHECK(upstream::FormatUpstreamAddress(options.server.nameservers[0]) == "tcp://192.0.2.1#53");
  CHECK(upstream::FormatUpstreamAddress(options.server.nameservers[1]) == "192.0.2.1#53");
  flags.nameservers = "tcp://127.0.0.1:10053";
  CHECK(ErrorOf(flags) == "--nameservers: 127.0.0.1:10053 is this kubedns itself");
  flags.nameservers = "";
  flags.notify = "tcp://127.0.0.1:53";
  CHECK(ErrorOf(flags).starts_with("--notify: "));
}

TEST_CASE("--nameservers takes tls:// upstreams; --tls-ca-file must load", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.nameservers = "tls://192.0.2.1@dns.example,tls://192.0.2.2:8853";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  REQUIRE(options.server.nameservers.size() == 2);
  CHECK(upstream::FormatUpstreamAddress(options.server.nameservers[0]) ==
        "tls://192.0.2.1#853@dns.example");
  CHECK(upstream::FormatUpstreamAddress(options.server.nameservers[1]) == "tls://192.0.2.2#8853");
  CHECK(options.server.forwarder.tls_context != nullptr);  // the system's CA bundle
  flags.tls_ca_file = "/nonexistent/ca.pem";
  CHECK(ErrorOf(flags).starts_with("--tls-ca-file: /nonexistent/ca.pem: "));
}

TEST_CASE("kubedns's API flags are checked when the API is the source", "[kubedns][options]") {
  FlagValues flags;
  flags.kube_master_url = "http://127.0.0.1:8080/";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  REQUIRE(options.server.api_config.has_value());
  CHECK(options.server.api.backoff.cap_ms == 30'000);
  CHECK(options.server.api.stall_timeout_ms == 90'000);

  flags.endpoints_source = "slices";
  CHECK(ErrorOf(flags) == "--endpoints-source: endpointslices or endpoints, not \"slices\"");
  flags.endpoints_source = "endpoints";
  flags.api_stall_timeout = "x";
  CHECK(ErrorOf(flags) == "--api-stall-timeout: not a duration: \"x\"");
}

TEST_CASE("kubedns's API QPS, burst and relist jitter default to client-go's and are checked",
          "[kubedns][options]") {
  FlagValues flags;
  flags.kube_master_url = "http://127.0.0.1:8080/";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.api.api_qps == 5);
  CHECK(options.server.api.api_burst == 10);
  CHECK(options.server.api.relist_jitter_ms == 5'000);
  CHECK_FALSE(options.server.api.watch_list);

  flags.api_qps = 20;
  flags.api_burst = 40;
  flags.api_relist_jitter = "0s";
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.api.api_qps == 20);
  CHECK(options.server.api.api_burst == 40);
  CHECK(options.server.api.relist_jitter_ms == 0);
  flags.api_qps = 0;  // no limit
  CHECK(ErrorOf(flags).empty());

  flags.api_qps = -1;
  CHECK(ErrorOf(flags).starts_with("--api-qps: a number of requests per second"));
  flags.api_qps = 5;
  flags.api_burst = 0;
  CHECK(ErrorOf(flags) == "--api-burst: from 1 to 1000000, not 0");
  flags.api_burst = 10;
  flags.api_relist_jitter = "often";
  CHECK(ErrorOf(flags) == "--api-relist-jitter: not a duration: \"often\"");
}

TEST_CASE("--check-flags in-cluster does not need the pod's service account",
          "[kubedns][options]") {
  FlagValues flags;  // no objects file, no kubeconfig, no master URL: in-cluster
  CHECK(ErrorOf(flags).starts_with("Kubernetes API: "));
  flags.check_flags = true;
  CHECK(ErrorOf(flags).empty());
  flags.kubecfg_file = "/nonexistent/kubeconfig";  // a flag given is a flag checked
  CHECK(ErrorOf(flags).starts_with("Kubernetes API: "));
}

TEST_CASE("kubedns's DNS over TCP flags default to server::TcpOptions' and reach the server",
          "[kubedns][options]") {
  Options options;
  std::string error;
  REQUIRE(BuildOptions(Offline(), Env({}), &options, &error));
  const server::TcpOptions expected;
  const server::TcpOptions& tcp = options.server.tcp;
  CHECK(tcp.idle_timeout_ms == expected.idle_timeout_ms);
  CHECK(tcp.frame_timeout_ms == expected.frame_timeout_ms);
  CHECK(tcp.query_timeout_ms == expected.query_timeout_ms);
  CHECK(tcp.max_connections == expected.max_connections);
  CHECK(tcp.max_connections_per_source == expected.max_connections_per_source);
  CHECK(tcp.max_pending_output_bytes == expected.max_pending_output_bytes);
  CHECK(tcp.max_pending_output_bytes_total == expected.max_pending_output_bytes_total);

  FlagValues flags = Offline();
  flags.tcp_idle_timeout = "3s";
  flags.tcp_frame_timeout = "250ms";
  flags.tcp_query_timeout = "1500ms";
  flags.tcp_max_connections = 64;
  flags.tcp_max_connections_per_source = 8;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.tcp.idle_timeout_ms == 3000);
  CHECK(options.server.tcp.frame_timeout_ms == 250);
  CHECK(options.server.tcp.query_timeout_ms == 1500);
  CHECK(options.server.tcp.max_connections == 64);
  CHECK(options.server.tcp.max_connections_per_source == 8);

  flags.tcp_max_connections_per_source = 65;  // above the total: the total applies
  CHECK(ErrorOf(flags).empty());
  flags = Offline();
  flags.tcp_frame_timeout = "x";
  CHECK(ErrorOf(flags) == "--tcp-frame-timeout: not a duration: \"x\"");
  flags = Offline();
  flags.tcp_query_timeout = "soon";
  CHECK(ErrorOf(flags) == "--tcp-query-timeout: not a duration: \"soon\"");
  flags = Offline();
  flags.tcp_max_output_bytes_per_connection = 100;
  CHECK(ErrorOf(flags) == "--tcp-max-output-bytes-per-connection: must be at least 65537");
}

TEST_CASE("kubedns --max-waiting-queries bounds the waiting queries, 10000 by default",
          "[kubedns][options][waiting]") {
  FlagValues flags = Offline();
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.max_waiting_queries == 10'000u);
  flags.max_waiting_queries = 500;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.max_waiting_queries == 500u);
  flags.max_waiting_queries = 0;
  CHECK(ErrorOf(flags) == "--max-waiting-queries: must be in 1..1000000");
}

TEST_CASE("kubedns --import-max-* bound one ServiceImport, with sane defaults",
          "[kubedns][options][multicluster]") {
  FlagValues flags = Offline();
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.import_limits.max_aliases == 100u);
  CHECK(options.server.import_limits.max_endpoints == 5000u);
  CHECK(options.server.import_limits.max_name_bytes == 512u * 1024);
  flags.import_max_aliases = 10'000;
  flags.import_max_endpoints = 7;
  flags.import_max_bytes = 1 << 20;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.import_limits.max_aliases == 10'000u);
  CHECK(options.server.import_limits.max_endpoints == 7u);
  CHECK(options.server.import_limits.max_name_bytes == 1u << 20);
  flags.import_max_aliases = 0;
  CHECK(ErrorOf(flags) == "--import-max-aliases: must be in 1..1000000");
  flags.import_max_aliases = 1;
  flags.import_max_endpoints = -1;
  CHECK(ErrorOf(flags) == "--import-max-endpoints: must be in 1..1000000");
  flags.import_max_endpoints = 1;
  flags.import_max_bytes = (int64_t{1} << 30) + 1;
  CHECK(ErrorOf(flags) == "--import-max-bytes: must be in 1..1073741824");
}

TEST_CASE("the per-client rate limit and RRL flags reach the server, checked", "[kubedns][rate]") {
  FlagValues flags = Offline();
  flags.rate_limits.client_rate_limit = 5000;
  flags.rate_limits.client_rate_exempt = "127.0.0.0/8,::1/128";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.rate_limits.client_rate_limit == 5000);
  CHECK(options.server.rate_limits.client_rate_exempt == "127.0.0.0/8,::1/128");
  flags.rate_limits.client_rate_slip = 11;
  CHECK(ErrorOf(flags) == "--client-rate-slip=11: must be 0..10");
  flags.rate_limits.client_rate_slip = 2;
  flags.rate_limits.client_rate_exempt = "pods";
  CHECK(ErrorOf(flags).starts_with("--client-rate-exempt: \"pods\" is not an address prefix"));
}

TEST_CASE("the client address is believed from loopback by default, the flags checked",
          "[kubedns][options][client_address]") {
  FlagValues flags = Offline();
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  const server::ClientAddressPolicy& policy = options.server.client_address;
  CHECK(policy.option_code == 65432);
  CHECK(policy.Trusts(*loop::SocketAddress::Parse("127.0.0.1:5353")));
  CHECK(policy.Trusts(*loop::SocketAddress::Parse("[::1]:5353")));
  CHECK_FALSE(policy.Trusts(*loop::SocketAddress::Parse("10.0.0.7:5353")));

  flags.client_address_from = "127.0.0.1/32";
  flags.client_address_option = 65001;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.client_address.option_code == 65001);
  CHECK_FALSE(options.server.client_address.Trusts(*loop::SocketAddress::Parse("127.0.0.2:53")));
  flags.client_address_from = "";  // no one
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.client_address.trusted.empty());

  flags.client_address_from = "frontend";
  CHECK(ErrorOf(flags).starts_with("--client-address-from: \"frontend\" is not an address prefix"));
  flags.client_address_from = "127.0.0.1";
  flags.client_address_option = 10;  // ECS's code: not private use
  CHECK(ErrorOf(flags) ==
        "--client-address-option=10: must be a private-use EDNS option code, 65001..65534");
}

TEST_CASE("the multicluster zone flags turn the zones and their watches on", "[kubedns][options]") {
  Options options;
  std::string error;
  FlagValues flags = Offline();
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK_FALSE(options.server.answer.multicluster_zone.has_value());
  CHECK_FALSE(options.server.answer.kubeslice_zone.has_value());
  CHECK_FALSE(options.server.api.watch_multicluster);
  CHECK_FALSE(options.server.api.watch_kubeslice);

  flags.multicluster_zone = "ClusterSet.Local";
  flags.kubeslice_zone = "slice.local.";
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.answer.multicluster_zone->ToText() == "clusterset.local.");
  CHECK(options.server.answer.kubeslice_zone->ToText() == "slice.local.");
  CHECK(options.server.api.watch_multicluster);
  CHECK(options.server.api.watch_kubeslice);

  flags.kubeslice_zone = "bad..zone";
  CHECK(ErrorOf(flags) == "--kubeslice-zone: not a domain name: \"bad..zone\"");
  flags.kubeslice_zone = "svc.cluster.local";
  CHECK(ErrorOf(flags) == "--kubeslice-zone: svc.cluster.local. overlaps cluster.local.");
  flags.kubeslice_zone = "clusterset.local";
  CHECK(ErrorOf(flags) == "--kubeslice-zone: clusterset.local. overlaps clusterset.local.");
  flags.kubeslice_zone = "";
  flags.multicluster_zone = "local";
  CHECK(ErrorOf(flags) == "--multicluster-zone: local. overlaps cluster.local.");
}

TEST_CASE("--external-zone takes a list of zones that overlap no other", "[kubedns][options]") {
  Options options;
  std::string error;
  FlagValues flags = Offline();
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.answer.external.zones.empty());
  CHECK(options.server.answer.external.ttl_s == 5);

  flags.external_zone = "Example.Org,lb.example.com.";
  flags.external_ttl = 30;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  REQUIRE(options.server.answer.external.zones.size() == 2);
  CHECK(options.server.answer.external.zones[0].ToText() == "example.org.");
  CHECK(options.server.answer.external.zones[1].ToText() == "lb.example.com.");
  CHECK(options.server.answer.external.ttl_s == 30);

  flags.external_zone = "svc.cluster.local";
  CHECK(ErrorOf(flags) == "--external-zone: svc.cluster.local. overlaps cluster.local.");
  flags.external_zone = "example.org,a.example.org";
  CHECK(ErrorOf(flags) == "--external-zone: a.example.org. overlaps example.org.");
  flags.external_zone = "example.org,";
  CHECK(ErrorOf(flags) == "--external-zone: an empty zone in \"example.org,\"");
  flags.external_zone = "example.org";
  flags.external_ttl = -1;
  CHECK(ErrorOf(flags) == "--external-ttl: must be in 0..2147483647");
  flags.external_ttl = 5;

  // A reverse zone answers PTR into a forward one, which must be there.
  flags.external_zone = "2.0.192.in-addr.arpa,8.b.d.0.1.0.0.2.ip6.arpa";
  CHECK(ErrorOf(flags) ==
        "--external-zone: a reverse zone needs a forward zone for its PTR targets");
  flags.external_zone = "2.0.192.in-addr.arpa,example.org";
  Options with_reverse;
  REQUIRE(BuildOptions(flags, Env({}), &with_reverse, &error));
  CHECK(with_reverse.server.answer.external.zones.size() == 2);
}

TEST_CASE("--external-ns-service names the Service whose addresses ns1.dns.<zone> has",
          "[kubedns][options]") {
  Options options;
  std::string error;
  FlagValues flags = Offline();
  flags.external_zone = "example.org";
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.answer.external.ns_service_namespace == "kube-system");
  CHECK(options.server.answer.external.ns_service_name == "kube-dns");
  flags.external_ns_service = "dns/edge";
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.answer.external.ns_service_namespace == "dns");
  CHECK(options.server.answer.external.ns_service_name == "edge");
  flags.external_ns_service = "";
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.answer.external.ns_service_name.empty());
  for (const char* bad : {"kube-dns", "/kube-dns", "kube-system/", "a/b/c"}) {
    flags.external_ns_service = bad;
    CHECK(ErrorOf(flags) ==
          "--external-ns-service: \"" + std::string(bad) + "\" is not NAMESPACE/NAME");
  }
}

TEST_CASE("--namespaces, --labels and --endpoint-pod-names build the object filter",
          "[kubedns][options]") {
  Options options;
  std::string error;
  FlagValues flags = Offline();
  flags.namespaces = "shop, kube-system";
  flags.labels = "app in (web, api),!internal";
  flags.endpoint_pod_names = true;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.filter.namespaces == std::vector<std::string>{"shop", "kube-system"});
  CHECK(options.server.filter.labels.text() == "app in (api,web),!internal");
  CHECK(options.server.api.service_label_selector == "app in (api,web),!internal");
  CHECK(options.server.filter.endpoint_pod_names);

  flags.labels = "app >= 3";
  CHECK(ErrorOf(flags).starts_with("--labels: \"app >= 3\": unknown operator"));
  flags.labels = "";
  flags.namespaces = "shop,,x";
  CHECK(ErrorOf(flags) == "--namespaces: an empty namespace in \"shop,,x\"");
}

TEST_CASE("a debug address off loopback is served, with a warning", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.debug_address = "0.0.0.0:10057";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  REQUIRE(options.server.debug_address.has_value());
  REQUIRE(options.warnings.size() == 1);
  CHECK(options.warnings[0].starts_with("--debug-address=0.0.0.0:10057 is not loopback"));
}

TEST_CASE("--log-queries turns the query log on, bounded by its rate", "[kubedns][options]") {
  Options options;
  std::string error;
  REQUIRE(BuildOptions(Offline(), Env({}), &options, &error));
  CHECK(options.server.query_log.detail == server::QueryLogOptions::Detail::kOff);
  FlagValues flags = Offline();
  flags.log_queries = true;
  flags.log_queries_rate = 20;
  flags.log_queries_sample = 4;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.query_log.detail == server::QueryLogOptions::Detail::kBasic);
  CHECK(options.server.query_log.max_lines_per_second == 20);
  CHECK(options.server.query_log.sample_one_in == 4);
  flags.log_queries_rate = -1;
  CHECK(ErrorOf(flags) == "--log-queries-rate: must be in 0..1000000 lines a second");
  flags.log_queries_rate = 1;
  flags.log_queries_sample = 0;
  CHECK(ErrorOf(flags) == "--log-queries-sample: must be in 1..1000000 (log one query in N)");
}

TEST_CASE("--log-queries=extra is --log-queries with the extra detail", "[kubedns][options]") {
  using Args = std::vector<std::string>;
  CHECK(ExpandLogQueriesExtra(Args{"kubedns", "--log-queries=extra", "--v=2"}) ==
        Args{"kubedns", "--log_queries", "--v=2", "--log_queries_extra"});
  CHECK(ExpandLogQueriesExtra(Args{"kubedns", "-log_queries=extra"}) ==
        Args{"kubedns", "--log_queries", "--log_queries_extra"});
  CHECK(ExpandLogQueriesExtra(Args{"kubedns", "--log-queries", "--log-queries=true"}) ==
        Args{"kubedns", "--log-queries", "--log-queries=true"});
  Options options;
  std::string error;
  FlagValues flags = Offline();
  flags.log_queries = true;
  flags.log_queries_extra = true;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.query_log.detail == server::QueryLogOptions::Detail::kExtra);
  flags.log_queries = false;  // --log-queries-extra alone logs nothing
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.query_log.detail == server::QueryLogOptions::Detail::kOff);
}

TEST_CASE("kubedns --autopath is off by default; --autopath-search gives the node's domains",
          "[kubedns][options][autopath]") {
  Options options;
  std::string error;
  REQUIRE(BuildOptions(Offline(), Env({}), &options, &error));
  CHECK_FALSE(options.server.autopath);
  CHECK_FALSE(options.server.autopath_search.has_value());  // resolv.conf's, at start-up

  FlagValues flags = Offline();
  flags.autopath = true;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.autopath);
  CHECK_FALSE(options.server.autopath_search.has_value());

  flags.autopath_search = "c.project.internal,Node.Example.";
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  REQUIRE(options.server.autopath_search.has_value());
  REQUIRE(options.server.autopath_search->size() == 2);
  CHECK((*options.server.autopath_search)[0].ToText() == "c.project.internal.");
  CHECK((*options.server.autopath_search)[1].ToText() == "Node.Example.");

  flags.autopath_search = "";  // given empty: no node domains at all
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.autopath_search == std::vector<dns::Name>{});

  for (const char* bad : {"a..b", "good.example,", ",", "."}) {
    CAPTURE(bad);
    flags.autopath_search = bad;
    CHECK(ErrorOf(flags).rfind("--autopath-search: not a domain name", 0) == 0);
  }
  flags.autopath = false;
  flags.autopath_search = "node.example";
  CHECK(ErrorOf(flags) == "--autopath-search: only with --autopath");
}

}  // namespace
}  // namespace kdns::kubedns

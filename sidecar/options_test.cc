#include "sidecar/options.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kdns::sidecar {
namespace {

struct Extracted {
  bool ok = false;
  std::vector<std::string> probes;
  std::vector<std::string> rest;
  std::string error;
};

Extracted Extract(std::vector<std::string_view> args) {
  Extracted out;
  out.ok = ExtractProbeFlags(args, &out.probes, &out.rest, &out.error);
  return out;
}

TEST_CASE("Every --probe form is taken out; the rest goes to gflags in order",
          "[sidecar][options]") {
  Extracted e = Extract({"--v=2", "--probe=a,127.0.0.1,x", "--dnsmasq-port", "10053", "--probe",
                         "b,127.0.0.1,y", "-probe=c,127.0.0.1,z", "-probe", "d,127.0.0.1,w",
                         "--prometheus-port=0", "--probes=not-ours", "--", "--probe=after"});
  REQUIRE(e.ok);
  CHECK(e.probes == std::vector<std::string>{"a,127.0.0.1,x", "b,127.0.0.1,y", "c,127.0.0.1,z",
                                             "d,127.0.0.1,w"});
  CHECK(e.rest == std::vector<std::string>{"--v=2", "--dnsmasq-port", "10053",
                                           "--prometheus-port=0", "--probes=not-ours", "--",
                                           "--probe=after"});
}

TEST_CASE("A --probe without a value is an error", "[sidecar][options]") {
  Extracted e = Extract({"--v=1", "--probe"});
  CHECK_FALSE(e.ok);
  CHECK_THAT(e.error, Catch::StartsWith("--probe needs a value"));
  CHECK(Extract({"--probe="}).probes == std::vector<std::string>{""});
}

TEST_CASE("Defaults are kube-dns's sidecar's", "[sidecar][options]") {
  Options options;
  std::string error;
  REQUIRE(BuildOptions(FlagValues{}, {}, &options, &error));
  CHECK(options.probes.empty());
  CHECK(options.dnsmasq.ToString() == "127.0.0.1:53");
  CHECK(options.dnsmasq_poll_interval_ms == 5000);
  CHECK(options.prometheus.ToString() == "0.0.0.0:10054");
  CHECK(options.prometheus_path == "/metrics");
  CHECK(options.prometheus_namespace == "kubedns");
}

TEST_CASE("The kube-dns Deployment's sidecar arguments build", "[sidecar][options]") {
  const std::vector<std::string> probes = {
      "kubedns,127.0.0.1:10053,kubernetes.default.svc.cluster.local,5,SRV",
      "dnsmasq,127.0.0.1:53,kubernetes.default.svc.cluster.local,5,SRV"};
  FlagValues flags;
  flags.dnsmasq_port = 53;
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, probes, &options, &error));
  REQUIRE(options.probes.size() == 2);
  CHECK(options.probes[0].label == "kubedns");
  CHECK(options.probes[1].server.ToString() == "127.0.0.1:53");
}

TEST_CASE("Bad flag values stop the start with one line naming the flag", "[sidecar][options]") {
  struct Case {
    const char* what;
    FlagValues flags;
    std::vector<std::string> probes;
    const char* error;
  };
  const auto with = [](auto change) {
    FlagValues flags;
    change(flags);
    return flags;
  };
  const std::vector<Case> cases = {
      {"duplicate label",
       {},
       {"a,127.0.0.1,x", "b,127.0.0.1,y", "a,127.0.0.2,z"},
       "--probe=a,127.0.0.2,z: duplicate label \"a\""},
      {"bad probe", {}, {"a,127.0.0.1"}, "invalid format to --probe"},
      {"dnsmasq addr",
       with([](FlagValues& f) { f.dnsmasq_addr = "dnsmasq.local"; }),
       {},
       "--dnsmasq-addr: \"dnsmasq.local\" is not an IP address"},
      {"dnsmasq port 0",
       with([](FlagValues& f) { f.dnsmasq_port = 0; }),
       {},
       "--dnsmasq-port: 0 is not a port in 1..65535"},
      {"dnsmasq port big",
       with([](FlagValues& f) { f.dnsmasq_port = 70000; }),
       {},
       "--dnsmasq-port: 70000 is not a port"},
      {"poll interval",
       with([](FlagValues& f) { f.dnsmasq_poll_interval_ms = 0; }),
       {},
       "--dnsmasq-poll-interval-ms: 0 is below 100"},
      {"prometheus addr",
       with([](FlagValues& f) { f.prometheus_addr = "::1:"; }),
       {},
       "--prometheus-addr: \"::1:\" is not an IP address"},
      {"prometheus port",
       with([](FlagValues& f) { f.prometheus_port = -1; }),
       {},
       "--prometheus-port: -1 is not a port in 0..65535"},
      {"prometheus path",
       with([](FlagValues& f) { f.prometheus_path = "metrics"; }),
       {},
       "--prometheus-path: \"metrics\" must start with '/'"},
      {"path on healthz",
       with([](FlagValues& f) { f.prometheus_path = "/healthz"; }),
       {},
       "--prometheus-path"},
      {"path under healthcheck",
       with([](FlagValues& f) { f.prometheus_path = "/healthcheck/x"; }),
       {},
       "--prometheus-path"},
      {"namespace",
       with([](FlagValues& f) { f.prometheus_namespace = "kube-dns"; }),
       {},
       "--prometheus-namespace: \"kube-dns\" is not usable in a metric name"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Options options;
    std::string error;
    CHECK_FALSE(BuildOptions(c.flags, c.probes, &options, &error));
    CHECK_THAT(error, Catch::Contains(c.error));
  }
}

TEST_CASE("Addresses may be IPv6, an empty Prometheus address means all", "[sidecar][options]") {
  FlagValues flags;
  flags.dnsmasq_addr = "::1";
  flags.prometheus_addr = "";
  flags.prometheus_port = 0;
  flags.prometheus_namespace = "";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, {}, &options, &error));
  CHECK(options.dnsmasq.ToString() == "[::1]:53");
  CHECK(options.prometheus.ToString() == "0.0.0.0:0");
  CHECK(options.prometheus_namespace.empty());
}

}  // namespace
}  // namespace kdns::sidecar

#include "nanny/node_local_args.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

namespace kdns::nanny {
namespace {

using Args = std::vector<std::string>;

Nanny::Options InPlace() {
  Nanny::Options options;
  options.mode = ApplyMode::kInPlace;
  options.child_argv = {"/bin/frontend-cache"};
  return options;
}

NodeLocalFlags Flags(const std::string& localip = "169.254.20.10,10.96.0.10") {
  NodeLocalFlags flags;
  flags.localip = localip;
  return flags;
}

std::string ErrorOf(const NodeLocalFlags& flags, const Args& child = {},
                    Nanny::Options options = InPlace()) {
  std::string error;
  if (BuildNodeLocalOptions(flags, child, &options, &error)) return "";
  return error;
}

}  // namespace

TEST_CASE("node-local mode is on with -localip", "[nanny][node-local]") {
  CHECK_FALSE(NodeLocalMode(NodeLocalFlags{}));
  CHECK(NodeLocalMode(Flags()));
}

TEST_CASE("node-cache's defaults make the DaemonSet's node cache", "[nanny][node-local]") {
  Nanny::Options options = InPlace();
  std::string error;
  REQUIRE(BuildNodeLocalOptions(Flags("169.254.20.10,10.96.0.10,fd00::a"), {"--cache-size=100"},
                                &options, &error));
  REQUIRE(options.node_local);
  const NodeLocal::Options& node = *options.node_local;
  REQUIRE(node.addresses.size() == 3);
  CHECK(node.addresses[2].ToString() == "fd00::a");
  CHECK(node.dns_port == 53);
  CHECK(node.setup_interface);
  CHECK(node.interface_name == "nodelocaldns");
  CHECK(node.setup_firewall);
  CHECK(node.firewall == FirewallChoice::kAuto);
  CHECK_FALSE(node.skip_teardown);
  CHECK(node.health_port == 8080);
  CHECK(node.sync_interval_ms == 60'000);
  CHECK(options.config_dir == "/etc/kube-dns");
  CHECK(options.upstream_service == "kube-dns-upstream");
  REQUIRE(options.listen.size() == 3);
  CHECK(options.listen[0].ToString() == "169.254.20.10:53");
  CHECK(options.listen[2].ToString() == "[fd00::a]:53");
  CHECK(options.child_argv ==
        Args{"/bin/frontend-cache", "--listen-address=169.254.20.10,10.96.0.10,fd00::a",
             "--prometheus-addr=0.0.0.0", "--prometheus-port=9253", "--prometheus-reuseport"});
}

TEST_CASE("node-cache's flags are taken with their meaning", "[nanny][node-local]") {
  NodeLocalFlags flags = Flags("169.254.20.10,169.254.20.10");
  flags.setupinterface = false;
  flags.setupiptables = false;
  flags.interfacename = "veth0";
  flags.skipteardown = true;
  flags.health_port = 9090;
  flags.syncinterval = "10s";
  flags.kubednscm = "/cm";
  flags.metrics_listen_address = "[::]:9353";
  flags.firewall = "nftables";
  flags.upstreamsvc = "central-dns";
  Nanny::Options options = InPlace();
  std::string error;
  REQUIRE(BuildNodeLocalOptions(flags, {"--port=5353"}, &options, &error));
  const NodeLocal::Options& node = *options.node_local;
  CHECK(node.addresses.size() == 1);  // repeats dropped
  CHECK(node.dns_port == 5353);
  CHECK_FALSE(node.setup_interface);
  CHECK_FALSE(node.setup_firewall);
  CHECK(node.interface_name == "veth0");
  CHECK(node.skip_teardown);
  CHECK(node.health_port == 9090);
  CHECK(node.sync_interval_ms == 10'000);
  CHECK(node.firewall == FirewallChoice::kNftables);
  CHECK(options.config_dir == "/cm");
  CHECK(options.upstream_service == "central-dns");
  CHECK(options.listen[0].ToString() == "169.254.20.10:5353");
  CHECK(options.child_argv[2] == "--prometheus-addr=::");
  CHECK(options.child_argv[3] == "--prometheus-port=9353");
}

TEST_CASE("a bad node-local flag is one line naming it", "[nanny][node-local]") {
  CHECK(ErrorOf(Flags("169.254.20.10,nodelocal")) == "-localip: not an IP address: \"nodelocal\"");
  CHECK(ErrorOf(Flags("169.254.20.10,")) == "-localip: not an IP address: \"\"");
  NodeLocalFlags flags = Flags();
  flags.health_port = 0;
  CHECK(ErrorOf(flags) == "-health-port: not a port: 0");
  flags = Flags();
  flags.health_port = 70000;
  CHECK(ErrorOf(flags) == "-health-port: not a port: 70000");
  flags = Flags();
  flags.syncinterval = "60";
  CHECK(ErrorOf(flags) == "-syncinterval: not a duration of more than 0: \"60\"");
  flags.syncinterval = "0s";
  CHECK(ErrorOf(flags) == "-syncinterval: not a duration of more than 0: \"0s\"");
  flags = Flags();
  flags.firewall = "ipvs";
  CHECK(ErrorOf(flags) == "--firewall: auto, nftables or iptables, not \"ipvs\"");
  flags = Flags();
  flags.metrics_listen_address = "9253";
  CHECK(ErrorOf(flags) == "-metrics-listen-address: not an IP:port: \"9253\"");
  flags = Flags();
  flags.interfacename = "";
  CHECK(ErrorOf(flags) == "-interfacename: empty");
  flags = Flags();
  flags.upstreamsvc = "";
  CHECK(ErrorOf(flags) == "-upstreamsvc: empty");
}

TEST_CASE("node-local mode refuses what the nanny sets itself and a dnsmasq child",
          "[nanny][node-local]") {
  CHECK(ErrorOf(Flags(), {"--listen-address=127.0.0.1"}) ==
        "--listen-address after \"--\": in node-local mode -localip sets it");
  CHECK(ErrorOf(Flags(), {"--prometheus-port=9153"}) ==
        "--prometheus-port after \"--\": in node-local mode -metrics-listen-address sets it");
  CHECK(ErrorOf(Flags(), {"--port=x"}) == "child argument --port: not a port: \"x\"");
  Nanny::Options restart = InPlace();
  restart.mode = ApplyMode::kRestart;
  CHECK(ErrorOf(Flags(), {}, restart) ==
        "-localip: node-local mode needs frontend-cache as the child (-dnsmasqExec)");
}

TEST_CASE("the upstream Service's ClusterIP comes from <NAME>_SERVICE_HOST",
          "[nanny][node-local]") {
  CHECK(ServiceHostVariable("kube-dns-upstream") == "KUBE_DNS_UPSTREAM_SERVICE_HOST");
  CHECK(ServiceHostVariable("kube-dns") == "KUBE_DNS_SERVICE_HOST");
  std::map<std::string, std::string> env = {{"KUBE_DNS_UPSTREAM_SERVICE_HOST", "10.96.0.11"},
                                            {"BAD_SERVICE_HOST", "dns"}};
  auto getenv = [&env](const char* name) -> const char* {
    auto found = env.find(name);
    return found == env.end() ? nullptr : found->second.c_str();
  };
  IpAddress ip;
  std::string error;
  REQUIRE(ServiceClusterIp("kube-dns-upstream", getenv, &ip, &error));
  CHECK(ip.ToString() == "10.96.0.11");
  CHECK_FALSE(ServiceClusterIp("central", getenv, &ip, &error));
  CHECK(error ==
        "-upstreamsvc central: CENTRAL_SERVICE_HOST is not set (the Service must exist when the "
        "pod is created)");
  CHECK_FALSE(ServiceClusterIp("bad", getenv, &ip, &error));
  CHECK(error == "-upstreamsvc bad: BAD_SERVICE_HOST is not an IP address: \"dns\"");
}

TEST_CASE("-conf and -basecorefile get one warning line", "[nanny][node-local]") {
  CHECK(IgnoredFlagsWarning({}).empty());
  CHECK(IgnoredFlagsWarning({"conf"}) ==
        "-conf has no meaning for kdns: the kube-dns ConfigMap (-kubednscm) and the flags "
        "replace the Corefile");
  CHECK(IgnoredFlagsWarning({"conf", "basecorefile"}) ==
        "-conf, -basecorefile have no meaning for kdns: the kube-dns ConfigMap (-kubednscm) and "
        "the flags replace the Corefile");
}

}  // namespace kdns::nanny

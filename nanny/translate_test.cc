#include "nanny/translate.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kdns::nanny {
namespace {

using Args = std::vector<std::string>;

// Validates (as kube-dns's Config.Validate) and translates (as its Nanny.Configure) the
// values; nullopt when the configuration is rejected.
std::optional<Args> Generate(std::optional<std::string> stubs, std::optional<std::string> upstreams,
                             const HostAddresses& hosts = {}) {
  config::ConfigDirData data{std::move(stubs), std::move(upstreams)};
  config::KubeDnsConfig parsed;
  std::string error;
  if (!config::ParseKubeDnsConfig(data, &parsed, &error)) return std::nullopt;
  RawConfig raw;
  REQUIRE(ExtractRawConfig(data, &raw, &error));
  return ToArguments(Translate(raw, hosts));
}

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

}  // namespace

TEST_CASE("kube-dns's translation table comes out argument for argument", "[nanny]") {
  // pkg/dnsmasq/nanny_test.go TestNannyConfig, with "--server" "V" as "--server=V" and the
  // stub domains in name order (kube-dns walks a Go map and sorts in its test).
  SECTION("no configuration: no argument") { CHECK(Generate({}, {}) == Args{}); }
  SECTION("stub domains, a port, a host name") {
    CHECK(Generate(R"({"acme.local": ["1.1.1.1"],
                       "widget.local": ["2.2.2.2:10053", "3.3.3.3"],
                       "google.local": ["google-public-dns-a.google.com"]})",
                   {}, {{"google-public-dns-a.google.com", Ip("8.8.8.8")}}) ==
          Args{"--server=/acme.local/1.1.1.1", "--server=/google.local/8.8.8.8",
               "--server=/widget.local/2.2.2.2#10053", "--server=/widget.local/3.3.3.3"});
  }
  SECTION("upstreams: ip:port becomes ip#port, and --no-resolv") {
    CHECK(Generate({}, R"(["2.2.2.2:10053", "3.3.3.3"])") ==
          Args{"--server=2.2.2.2#10053", "--server=3.3.3.3", "--no-resolv"});
  }
  SECTION("IPv6 upstreams keep their brackets; a bare address is unchanged") {
    // kube-dns's table also has "[2001:db8:2::2]" (brackets, no port), which its own
    // validation rejects before the nanny sees it; so does ours (below).
    CHECK(Generate({}, R"(["2001:db8:1::1", "[2001:db8:3::3]:53"])") ==
          Args{"--server=2001:db8:1::1", "--server=[2001:db8:3::3]#53", "--no-resolv"});
  }
  SECTION("stub servers and upstreams together: stubs first, then upstreams") {
    CHECK(Generate(R"({"b.example": ["[fd00::53]:5353", "fd00::54"], "a.example": ["10.0.0.1"]})",
                   R"(["8.8.8.8"])") ==
          Args{"--server=/a.example/10.0.0.1", "--server=/b.example/[fd00::53]#5353",
               "--server=/b.example/fd00::54", "--server=8.8.8.8", "--no-resolv"});
  }
  SECTION("a stub domain with no server adds nothing") {
    CHECK(Generate(R"({"empty.example": [], "null.example": null})", {}) == Args{});
  }
  SECTION("an empty upstream list is no upstream: resolv.conf stays") {
    CHECK(Generate({}, "[]") == Args{});
    CHECK(Generate({}, "null") == Args{});
  }
}

TEST_CASE("kube-dns's validation table: what it accepts is accepted", "[nanny]") {
  // pkg/dns/config/config_test.go TestValidate, the valid half (federations are ignored).
  auto [stubs, upstreams] = GENERATE(table<std::optional<std::string>, std::optional<std::string>>({
      {R"({})", std::nullopt},
      {R"({"foo.com": ["1.2.3.4"]})", std::nullopt},
      {R"({"foo.com": ["ns.foo.com"]})", std::nullopt},
      {R"({"foo.com": ["ns.foo.com"], "bar.com": ["1.2.3.4"]})", std::nullopt},
      {std::nullopt, R"([])"},
      {std::nullopt, R"(["1.2.3.4"])"},
      {std::nullopt, R"(["1.2.3.4", "8.8.4.4", "8.8.8.8"])"},
      // And every nameserver form kube-dns's validation lets through.
      {R"({"foo.com": ["1.2.3.4:5353", "fd00::1", "[fd00::1]:5353", "a-b.c-d.example"]})",
       std::nullopt},
      {std::nullopt, R"(["1.2.3.4:5353", "fd00::1", "[fd00::1]:53"])"},
  }));
  CAPTURE(stubs, upstreams);
  CHECK(Generate(stubs, upstreams).has_value());
}

TEST_CASE("kube-dns's validation table: what it rejects is rejected", "[nanny]") {
  // TestValidate's invalid half, then the cases its validators reject in config.go and
  // util.ValidateNameserverIpAndPort.
  auto [stubs, upstreams] = GENERATE(table<std::optional<std::string>, std::optional<std::string>>({
      {R"({"": ["1.2.3.4"]})", std::nullopt},
      {R"({"$$$$": ["1.2.3.4"]})", std::nullopt},
      {R"({"foo": ["$$$$"]})", std::nullopt},
      {std::nullopt, R"(["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"])"},
      {R"({"Foo.com": ["1.2.3.4"]})", std::nullopt},        // not lower case
      {R"({"foo.com.": ["1.2.3.4"]})", std::nullopt},       // trailing dot
      {R"({"foo.com": ["ns.foo.com:53"]})", std::nullopt},  // a host name with a port
      {R"({"foo.com": ["1.2.3.4:99999"]})", std::nullopt},  // port out of range
      {R"({"foo.com": ["[2001:db8::2]"]})", std::nullopt},  // brackets without a port
      {std::nullopt, R"(["[2001:db8:2::2]"])"},             // same, upstream
      {std::nullopt, R"(["ns.example.com"])"},              // upstreams are IPs only
      {std::nullopt, R"(["1.2.3.4:port"])"},
      {R"(["1.2.3.4"])", std::nullopt},             // not an object
      {std::nullopt, R"({"a": "1.2.3.4"})"},        // not a list
      {R"({"foo.com": "1.2.3.4"})", std::nullopt},  // servers not a list
      {R"(not json)", std::nullopt},
      {std::nullopt, R"()"},                         // an empty value is not JSON
      {R"({"ok.com": ["1.2.3.4"]})", R"(["bad"])"},  // one bad key rejects the whole update
  }));
  CAPTURE(stubs, upstreams);
  CHECK_FALSE(Generate(stubs, upstreams).has_value());
}

TEST_CASE("kube-dns's munge turns the port colon into '#' and nothing else", "[nanny]") {
  auto [in, out] = GENERATE(table<std::string, std::string>({
      {"1.2.3.4", "1.2.3.4"},
      {"1.2.3.4:53", "1.2.3.4#53"},
      {"2001:db8::1", "2001:db8::1"},
      {"[2001:db8::1]", "[2001:db8::1]"},
      {"[2001:db8::1]:5353", "[2001:db8::1]#5353"},
      {"ns.example.com", "ns.example.com"},
      {"tls://1.1.1.1", "tls://1.1.1.1"},
      {"tls://1.1.1.1:8853", "tls://1.1.1.1#8853"},
      {"tls://1.1.1.1@one.one.one.one", "tls://1.1.1.1@one.one.one.one"},
      {"tls://1.1.1.1:853@one.one.one.one", "tls://1.1.1.1#853@one.one.one.one"},
      {"tls://[2001:db8::1]:853@dns.example", "tls://[2001:db8::1]#853@dns.example"},
  }));
  CHECK(MungeAddress(in) == out);
}

TEST_CASE("stub host names use their last known address, or are left out", "[nanny]") {
  const std::string stubs = R"({"a.example": ["ns1.example", "10.0.0.1"],
                                "b.example": ["ns2.svc.cluster.local"]})";
  config::ConfigDirData data{stubs, {}};
  RawConfig raw;
  std::string error;
  REQUIRE(ExtractRawConfig(data, &raw, &error));
  CHECK(HostNames(raw) == Args{"ns1.example", "ns2.svc.cluster.local"});

  SECTION("all known") {
    ChildConfig config = Translate(
        raw, {{"ns1.example", Ip("192.0.2.1")}, {"ns2.svc.cluster.local", Ip("fd00::2")}});
    CHECK(config.servers ==
          Args{"/a.example/192.0.2.1", "/a.example/10.0.0.1", "/b.example/fd00::2"});
    CHECK(config.unresolved.empty());
  }
  SECTION("one unknown: left out of a domain that has another server") {
    ChildConfig config = Translate(raw, {{"ns2.svc.cluster.local", Ip("10.0.0.2")}});
    CHECK(config.servers == Args{"/a.example/10.0.0.1", "/b.example/10.0.0.2"});
    CHECK(config.unresolved == Args{"ns1.example"});
  }
  SECTION("a domain with no known server is kept local, never sent to the default upstreams") {
    ChildConfig config = Translate(raw, {});
    CHECK(config.servers == Args{"/a.example/10.0.0.1", "/b.example/"});
    CHECK(config.unresolved == Args{"ns1.example", "ns2.svc.cluster.local"});
  }
}

TEST_CASE("the servers file carries the same servers, one line each", "[nanny]") {
  ChildConfig config;
  config.servers = {"/a.example/10.0.0.1#5353", "8.8.8.8"};
  config.no_resolv = true;
  CHECK(ToServersFile(config, "0123456789abcdef") ==
        "# Written by the nanny from the kube-dns ConfigMap, version 0123456789abcdef.\n"
        "server=/a.example/10.0.0.1#5353\n"
        "server=8.8.8.8\n");
}

TEST_CASE("the runtime switches go into the servers file, in-place mode's only", "[nanny]") {
  config::ConfigDirData data;
  data.log_queries = "extra\n";
  data.debug_data = "false";
  config::KubeDnsConfig parsed;
  std::string error;
  REQUIRE(config::ParseKubeDnsConfig(data, &parsed, &error));
  RawConfig raw;
  REQUIRE(ExtractRawConfig(data, &raw, &error));
  CHECK(raw.switches == parsed.switches);
  const ChildConfig child = Translate(raw, {});
  CHECK(ToServersFile(child, "v") ==
        "# Written by the nanny from the kube-dns ConfigMap, version v.\n"
        "log-queries=extra\n"
        "debug-data=false\n");
  CHECK(ToArguments(child).empty());  // restart mode: dnsmasq's arguments unchanged
  // A switch changes the version, so the nanny applies it.
  CHECK(ConfigVersion(data) != ConfigVersion(config::ConfigDirData{}));
  data.debug_data = "maybe";
  CHECK_FALSE(ExtractRawConfig(data, &raw, &error));
  CHECK(error == "kdns.debugData: \"maybe\" is not true or false");
}

TEST_CASE("kdns.routeOptions go into the servers file as route-options lines",
          "[nanny][route_options]") {
  config::ConfigDirData data;
  data.stub_domains = R"({"acme.local": ["1.2.3.4"]})";
  data.route_options = R"({"acme.local": "force_tcp", ".": "policy=sequential"})";
  config::KubeDnsConfig parsed;
  std::string error;
  REQUIRE(config::ParseKubeDnsConfig(data, &parsed, &error));
  RawConfig raw;
  REQUIRE(ExtractRawConfig(data, &raw, &error));
  const ChildConfig child = Translate(raw, {});
  CHECK(ToServersFile(child, "v") ==
        "# Written by the nanny from the kube-dns ConfigMap, version v.\n"
        "server=/acme.local/1.2.3.4\n"
        "route-options=policy=sequential\n"
        "route-options=/acme.local/force_tcp\n");
  CHECK(ToArguments(child) == std::vector<std::string>{"--server=/acme.local/1.2.3.4"});
  const std::string before = ConfigVersion(data);
  data.route_options = R"({"acme.local": "prefer_udp"})";
  CHECK(ConfigVersion(data) != before);
}

TEST_CASE("the version changes with any value and tells absent from empty", "[nanny]") {
  using Data = config::ConfigDirData;
  const std::string none = ConfigVersion(Data{});
  CHECK(none.size() == 16);
  CHECK(ConfigVersion(Data{}) == none);
  CHECK(ConfigVersion(Data{"", {}}) != none);
  CHECK(ConfigVersion(Data{"{}", {}}) != ConfigVersion(Data{{}, "{}"}));
  CHECK(ConfigVersion(Data{"{}", "[]"}) == ConfigVersion(Data{"{}", "[]"}));
  CHECK(ConfigVersion(Data{"{}", "[]"}) != ConfigVersion(Data{"{} ", "[]"}));
}

TEST_CASE("repeated stub domains: the last one wins, as in kube-dns's JSON decoding", "[nanny]") {
  CHECK(Generate(R"({"a.example": ["10.0.0.1"], "a.example": ["10.0.0.2"]})", {}) ==
        Args{"--server=/a.example/10.0.0.2"});
}

TEST_CASE("the multicluster zones are routed to kubedns before the stub domains", "[nanny]") {
  RawConfig raw;
  raw.stub_domains = {{"acme.local", {"1.2.3.4"}}};
  raw.upstream_nameservers = {"8.8.8.8"};
  ChildConfig child = Translate(raw, {});
  AddKubednsZones({"clusterset.local", "slice.local"}, "127.0.0.1:10053", &child);
  CHECK(ToArguments(child) == std::vector<std::string>{"--server=/clusterset.local/127.0.0.1#10053",
                                                       "--server=/slice.local/127.0.0.1#10053",
                                                       "--server=/acme.local/1.2.3.4",
                                                       "--server=8.8.8.8", "--no-resolv"});
  ChildConfig none = Translate(raw, {});
  AddKubednsZones({}, "127.0.0.1:10053", &none);
  CHECK(none == Translate(raw, {}));
  CHECK(ToServersFile(child, "v").find("server=/slice.local/127.0.0.1#10053\n") !=
        std::string::npos);
}

TEST_CASE("node-local mode routes the cluster zones to the upstream Service's ClusterIP",
          "[nanny][node-local]") {
  CHECK(ClusterZones("Cluster.Local.", {"clusterset.local", "ip6.arpa"}) ==
        std::vector<std::string>{"cluster.local", "in-addr.arpa", "ip6.arpa", "clusterset.local"});
  ChildConfig config;
  config.servers = {"/acme.local/1.2.3.4", "8.8.8.8"};
  AddClusterZones({"cluster.local", "in-addr.arpa"}, *IpAddress::Parse("10.96.0.11"), &config);
  CHECK(config.servers == std::vector<std::string>{"/cluster.local/tcp://10.96.0.11#53",
                                                   "/in-addr.arpa/tcp://10.96.0.11#53",
                                                   "/acme.local/1.2.3.4", "8.8.8.8"});
  ChildConfig v6;
  AddClusterZones({"cluster.local"}, *IpAddress::Parse("fd00::11"), &v6);
  CHECK(v6.servers == std::vector<std::string>{"/cluster.local/tcp://[fd00::11]#53"});
}

}  // namespace kdns::nanny

#include "common/config/kube_dns_config.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "common/dns/testing.h"
#include "test/unit/temp_dir.h"

namespace kdns::config {
namespace {

using kdns::testing::TempDir;

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

KubeDnsConfig Parse(std::optional<std::string> stubs, std::optional<std::string> upstreams) {
  ConfigDirData data{std::move(stubs), std::move(upstreams)};
  KubeDnsConfig config;
  std::string error;
  const bool ok = ParseKubeDnsConfig(data, &config, &error);
  INFO(error);
  REQUIRE(ok);
  return config;
}

std::string Reject(std::optional<std::string> stubs, std::optional<std::string> upstreams) {
  ConfigDirData data{std::move(stubs), std::move(upstreams)};
  KubeDnsConfig config;
  std::string error;
  CHECK_FALSE(ParseKubeDnsConfig(data, &config, &error));
  return error;
}

// Lays `dir` out as the kubelet does: a timestamped directory, `..data` pointing at it,
// one symlink per key through `..data`. Swapping to a new version renames a fresh link over
// `..data` and removes the old directory.
class ConfigMapVolume {
 public:
  explicit ConfigMapVolume(std::string dir) : dir_(std::move(dir)) {}

  void Publish(const std::map<std::string, std::string>& data) {
    const std::string version = "..2024_01_01_00_00_0" + std::to_string(++versions_);
    std::filesystem::create_directory(dir_ + "/" + version);
    const std::filesystem::path version_dir = std::filesystem::path(dir_) / version;
    for (const auto& [key, value] : data) Write(version_dir / key, value);
    std::filesystem::create_symlink(version, dir_ + "/..data_tmp");
    std::filesystem::rename(dir_ + "/..data_tmp", dir_ + "/..data");
    for (const auto& [key, value] : data) {
      std::error_code ignored;
      std::filesystem::create_symlink("..data/" + key, dir_ + "/" + key, ignored);
    }
    if (!current_.empty()) std::filesystem::remove_all(dir_ + "/" + current_);
    current_ = version;
  }
  const std::string& current() const { return current_; }

 private:
  std::string dir_;
  std::string current_;
  int versions_ = 0;
};

}  // namespace

TEST_CASE("stubDomains accept every nameserver form kube-dns accepts", "[config]") {
  KubeDnsConfig config = Parse(R"({
      "acme.local": ["1.2.3.4", "1.2.3.5:5353", "[fd00::53]:5300", "fd00::54", "dns.acme.example"],
      "z.example": [],
      "b.example": null})",
                               std::nullopt);
  REQUIRE(config.stub_domains.size() == 3);
  // Sorted by domain.
  CHECK(config.stub_domains[0].domain.ToText() == "acme.local.");
  CHECK(config.stub_domains[1].domain.ToText() == "b.example.");
  CHECK(config.stub_domains[2].domain.ToText() == "z.example.");
  const auto& servers = config.stub_domains[0].servers;
  REQUIRE(servers.size() == 5);
  CHECK(servers[0].ToString() == "1.2.3.4#53");
  CHECK(servers[1].ToString() == "1.2.3.5#5353");
  CHECK(servers[2].ToString() == "fd00::53#5300");
  CHECK(servers[3].ToString() == "fd00::54#53");
  CHECK(servers[4].is_host());
  CHECK(servers[4].ToString() == "dns.acme.example");
  CHECK(config.stub_domains[1].servers.empty());
  CHECK(config.upstream_nameservers.empty());
  CHECK(config.ToString() ==
        "stubDomains: {acme.local.=[1.2.3.4#53, 1.2.3.5#5353, fd00::53#5300, fd00::54#53, "
        "dns.acme.example], b.example.=[], z.example.=[]}; upstreamNameservers: []");
}

TEST_CASE("upstreamNameservers accept IPs with an optional port", "[config]") {
  KubeDnsConfig config = Parse(std::nullopt, R"(["8.8.8.8", "1.1.1.1:5353", "[2001:db8::1]:53"])");
  REQUIRE(config.upstream_nameservers.size() == 3);
  CHECK(config.upstream_nameservers[0].address.ToString() == "8.8.8.8:53");
  CHECK(config.upstream_nameservers[1].address.ToString() == "1.1.1.1:5353");
  CHECK(config.upstream_nameservers[2].address.ToString() == "[2001:db8::1]:53");
  CHECK(Parse(std::nullopt, "null").empty());
  CHECK(Parse(std::nullopt, " [ ] ").empty());
}

TEST_CASE("tcp:// before an IP names an upstream asked over TCP, in both keys", "[config]") {
  KubeDnsConfig config = Parse(R"({"acme.local": ["tcp://1.2.3.4", "tcp://[fd00::53]:5300"]})",
                               R"(["tcp://10.0.0.1:53", "8.8.8.8"])");
  REQUIRE(config.upstream_nameservers.size() == 2);
  CHECK(config.upstream_nameservers[0].transport == upstream::UpstreamTransport::kTcp);
  CHECK(config.upstream_nameservers[1].transport == upstream::UpstreamTransport::kUdp);
  CHECK(config.ToString() ==
        "stubDomains: {acme.local.=[tcp://1.2.3.4#53, tcp://fd00::53#5300]}; "
        "upstreamNameservers: [tcp://10.0.0.1#53, 8.8.8.8#53]");
  // A host name is resolved into plain addresses: no scheme; and no other scheme.
  CHECK(Reject(R"({"a.example": ["tcp://dns.example"]})", std::nullopt) ==
        R"(stubDomains["a.example"]: invalid nameserver "tcp://dns.example" )"
        "(ip, ip:port, [ipv6]:port or a host name)");
  CHECK(!Reject(std::nullopt, R"(["udp://10.0.0.1"])").empty());
}

TEST_CASE("kdns.routeOptions set options for stub domains and the default upstreams",
          "[config][route_options]") {
  ConfigDirData data;
  data.stub_domains = R"({"acme.local": ["1.2.3.4"], "corp.example": ["5.6.7.8"]})";
  data.route_options = R"({"acme.local": "force_tcp,policy=sequential", ".": "max_fails=3"})";
  KubeDnsConfig config;
  std::string error;
  REQUIRE(ParseKubeDnsConfig(data, &config, &error));
  REQUIRE(config.route_options.size() == 2);
  CHECK(config.route_options[0].default_route);  // "." sorts first
  CHECK(config.route_options[0].options.max_fails == 3u);
  CHECK(config.route_options[1].domains == std::vector<dns::Name>{dns::testing::N("acme.local.")});
  CHECK(config.route_options[1].options.transport == upstream::RouteTransport::kForceTcp);
  CHECK(config.ToString().find("kdns.routeOptions[acme.local.]=force_tcp,policy=sequential") !=
        std::string::npos);

  // A route the ConfigMap does not define, a bad option, or not an object of strings: the
  // whole version is rejected.
  for (const char* bad : {R"({"other.example": "force_tcp"})", R"({"acme.local": "fast"})",
                          R"({"acme.local": ["force_tcp"]})", R"(["force_tcp"])", "{"}) {
    data.route_options = bad;
    CHECK_FALSE(ParseKubeDnsConfig(data, &config, &error));
    CHECK(error.starts_with("kdns.routeOptions"));
  }
}

TEST_CASE("tls:// before an IP names a DNS-over-TLS upstream, in both keys", "[config]") {
  KubeDnsConfig config =
      Parse(R"({"acme.local": ["tls://1.2.3.4@dns.acme.local", "tls://[fd00::53]:8853"]})",
            R"(["tls://1.1.1.1@one.one.one.one", "8.8.8.8"])");
  REQUIRE(config.upstream_nameservers.size() == 2);
  CHECK(config.upstream_nameservers[0].transport == upstream::UpstreamTransport::kTls);
  CHECK(config.upstream_nameservers[0].server_name == "one.one.one.one");
  CHECK(config.ToString() ==
        "stubDomains: {acme.local.=[tls://1.2.3.4#853@dns.acme.local, tls://fd00::53#8853]}; "
        "upstreamNameservers: [tls://1.1.1.1#853@one.one.one.one, 8.8.8.8#53]");
  CHECK(!Reject(R"({"a.example": ["tls://dns.example"]})", std::nullopt).empty());
  CHECK(!Reject(std::nullopt, R"(["tls://10.0.0.1@bad_name"])").empty());
}

TEST_CASE("absent keys make the empty config", "[config]") {
  CHECK(Parse(std::nullopt, std::nullopt).empty());
  CHECK(Parse("{}", "[]").empty());
}

TEST_CASE("the last of repeated stub domains wins, as with Go's JSON decoder", "[config]") {
  KubeDnsConfig config = Parse(R"({"a.example": ["1.1.1.1"], "a.example": ["2.2.2.2"]})", {});
  REQUIRE(config.stub_domains.size() == 1);
  REQUIRE(config.stub_domains[0].servers.size() == 1);
  CHECK(config.stub_domains[0].servers[0].ToString() == "2.2.2.2#53");
}

TEST_CASE("an invalid value rejects the whole config with a one-line error", "[config]") {
  struct Case {
    std::optional<std::string> stubs;
    std::optional<std::string> upstreams;
    std::string error;
  };
  auto [stubs, upstreams, error] = GENERATE(
      Case{"{", {}, "stubDomains: not JSON: Missing a name for object member. at offset 1"},
      Case{"", {}, "stubDomains: not JSON: The document is empty. at offset 0"},
      Case{R"(["1.2.3.4"])", {}, "stubDomains: not a JSON object of domain to list of nameservers"},
      Case{R"({"Acme.local": ["1.2.3.4"]})",
           {},
           "stubDomains: invalid domain name \"Acme.local\" (lower case DNS name without the "
           "trailing dot)"},
      Case{R"({"acme.local.": ["1.2.3.4"]})",
           {},
           "stubDomains: invalid domain name \"acme.local.\" (lower case DNS name without the "
           "trailing dot)"},
      Case{R"({"-acme.local": ["1.2.3.4"]})",
           {},
           "stubDomains: invalid domain name \"-acme.local\" (lower case DNS name without the "
           "trailing dot)"},
      Case{R"({"acme.local": "1.2.3.4"})",
           {},
           "stubDomains[\"acme.local\"]: not a list of nameservers"},
      Case{R"({"acme.local": [53]})", {}, "stubDomains[\"acme.local\"]: not a list of nameservers"},
      Case{R"({"acme.local": ["dns.acme.example:53"]})",
           {},
           "stubDomains[\"acme.local\"]: invalid nameserver \"dns.acme.example:53\" (ip, ip:port, "
           "[ipv6]:port or a host name)"},
      Case{R"({"acme.local": ["1.2.3.4:0"]})",
           {},
           "stubDomains[\"acme.local\"]: invalid nameserver \"1.2.3.4:0\" (ip, ip:port, "
           "[ipv6]:port or a host name)"},
      Case{R"({"acme.local": ["1.2.3.4:65536"]})",
           {},
           "stubDomains[\"acme.local\"]: invalid nameserver \"1.2.3.4:65536\" (ip, ip:port, "
           "[ipv6]:port or a host name)"},
      Case{R"({"acme.local": ["[fd00::1]"]})",
           {},
           "stubDomains[\"acme.local\"]: invalid nameserver \"[fd00::1]\" (ip, ip:port, "
           "[ipv6]:port or a host name)"},
      Case{R"({"acme.local": ["fe80::1%eth0"]})",
           {},
           "stubDomains[\"acme.local\"]: invalid nameserver \"fe80::1%eth0\" (ip, ip:port, "
           "[ipv6]:port or a host name)"},
      Case{{},
           R"(["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"])",
           "upstreamNameservers: more than three entries (4)"},
      Case{{},
           R"(["dns.example"])",
           "upstreamNameservers: invalid nameserver \"dns.example\" (an IP address with an "
           "optional port)"},
      Case{{},
           R"(["1.1.1.1:x"])",
           "upstreamNameservers: invalid nameserver \"1.1.1.1:x\" (an IP address with an "
           "optional port)"},
      Case{{}, R"({"a": "1.1.1.1"})", "upstreamNameservers: not a JSON list of nameservers"},
      Case{{}, R"([1])", "upstreamNameservers: not a list of strings"},
      // A good key does not save a bad one.
      Case{R"({"acme.local": ["1.2.3.4"]})", "[\"x\"]",
           "upstreamNameservers: invalid nameserver \"x\" (an IP address with an optional port)"});
  CAPTURE(stubs, upstreams);
  CHECK(Reject(stubs, upstreams) == error);
}

// The nameserver address forms are tested in common/upstream/upstream_address_test.cc.
TEST_CASE("DNS-1123 names are recognised as Kubernetes does", "[config]") {
  CHECK(IsDns1123Subdomain("a"));
  CHECK(IsDns1123Subdomain("acme.local"));
  CHECK(IsDns1123Subdomain("0-a.b-1"));
  CHECK(IsDns1123Subdomain(std::string(253, 'a')));
  CHECK_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
  for (const char* bad : {"", ".", "a.", ".a", "a..b", "A", "a_b", "a-", "-a", "a.-b", "a b"}) {
    CAPTURE(bad);
    CHECK_FALSE(IsDns1123Subdomain(bad));
  }
}

TEST_CASE("A DNS-1123 label is one such label of at most 63 characters", "[config]") {
  CHECK(IsDns1123Label("a"));
  CHECK(IsDns1123Label("0-a"));
  CHECK(IsDns1123Label(std::string(63, 'a')));
  for (const std::string& bad : {std::string(64, 'a'), std::string("a.b"), std::string(""),
                                 std::string("-a"), std::string("A"), std::string("a_b")}) {
    CAPTURE(bad);
    CHECK_FALSE(IsDns1123Label(bad));
  }
}

TEST_CASE("a plain directory is read as files; missing keys are absent", "[config]") {
  TempDir dir;
  KubeDnsConfig config;
  std::string error;
  REQUIRE(LoadKubeDnsConfig(dir.path(), &config, &error));
  CHECK(config.empty());

  Write(dir.File("upstreamNameservers"), R"(["10.1.1.1"])");
  Write(dir.File("federations"), "ignored=example.com");
  REQUIRE(LoadKubeDnsConfig(dir.path(), &config, &error));
  REQUIRE(config.upstream_nameservers.size() == 1);
  CHECK(config.stub_domains.empty());

  Write(dir.File("stubDomains"), R"({"x.example": ["nope:"]})");
  CHECK_FALSE(LoadKubeDnsConfig(dir.path(), &config, &error));
  CHECK(error == dir.path() +
                     ": stubDomains[\"x.example\"]: invalid nameserver \"nope:\" (ip, ip:port, "
                     "[ipv6]:port or a host name)");
}

TEST_CASE("a directory that cannot be read is an error, never the empty config", "[config]") {
  TempDir dir;
  ConfigDirData data;
  std::string error;
  SECTION("missing") {
    CHECK_FALSE(ReadConfigDir(dir.File("nope"), &data, &error));
    CHECK(error == dir.File("nope") + ": cannot open: No such file or directory");
  }
  SECTION("a key that is a directory") {
    std::filesystem::create_directory(dir.File("stubDomains"));
    CHECK_FALSE(ReadConfigDir(dir.path(), &data, &error));
    CHECK(error == dir.path() + "/stubDomains: not a regular file");
  }
  SECTION("..data pointing at nothing") {
    std::filesystem::create_symlink("..gone", dir.File("..data"));
    CHECK_FALSE(ReadConfigDir(dir.path(), &data, &error));
    CHECK(error == dir.path() + "/..gone: cannot open: No such file or directory");
  }
  SECTION("larger than a ConfigMap") {
    Write(dir.File("stubDomains"), std::string(kMaxValueBytes + 1, ' '));
    CHECK_FALSE(ReadConfigDir(dir.path(), &data, &error));
    CHECK(error == dir.path() + "/stubDomains: larger than a ConfigMap can be (1 MiB)");
  }
}

TEST_CASE("a mounted ConfigMap is read from the one version ..data points at", "[config]") {
  TempDir dir;
  ConfigMapVolume volume(dir.path());
  volume.Publish({{"stubDomains", R"({"a.example": ["10.0.0.1"]})"},
                  {"upstreamNameservers", R"(["10.0.0.2"])"}});
  ConfigDirData data;
  std::string error;
  REQUIRE(ReadConfigDir(dir.path(), &data, &error));
  CHECK(data.stub_domains == R"({"a.example": ["10.0.0.1"]})");
  CHECK(data.upstream_nameservers == R"(["10.0.0.2"])");

  // The top-level key links are not followed: a stale or foreign file there is not read.
  std::filesystem::remove(dir.File("upstreamNameservers"));
  Write(dir.File("upstreamNameservers"), R"(["192.0.2.99"])");
  REQUIRE(ReadConfigDir(dir.path(), &data, &error));
  CHECK(data.upstream_nameservers == R"(["10.0.0.2"])");

  // A new version without upstreamNameservers: that key is now absent.
  volume.Publish({{"stubDomains", R"({"b.example": ["10.0.0.3"]})"}});
  REQUIRE(ReadConfigDir(dir.path(), &data, &error));
  CHECK(data.stub_domains == R"({"b.example": ["10.0.0.3"]})");
  CHECK_FALSE(data.upstream_nameservers.has_value());

  KubeDnsConfig config;
  REQUIRE(LoadKubeDnsConfig(dir.path(), &config, &error));
  REQUIRE(config.stub_domains.size() == 1);
  CHECK(config.stub_domains[0].domain.ToText() == "b.example.");
}

}  // namespace kdns::config

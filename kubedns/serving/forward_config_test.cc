#include "kubedns/serving/forward_config.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/dns/testing.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/text_parser.h"
#include "common/upstream/testing.h"
#include "test/unit/temp_dir.h"

namespace kdns::kubedns {
namespace {

using dns::testing::N;
using kdns::testing::TempDir;

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path + ".tmp");
  out << text;
  out.close();
  std::filesystem::rename(path + ".tmp", path);
}

// A ForwardConfig over a temporary ConfigMap directory and resolv.conf, recording what it
// publishes.
class Fixture {
 public:
  Fixture() {
    std::filesystem::create_directory(dir_.File("config"));
    Write(dir_.File("resolv.conf"), "nameserver 10.53.0.1\n");
  }

  ForwardConfig& Make(std::vector<upstream::Upstream> flag_nameservers = {}) {
    ForwardConfig::Options options;
    options.config_dir = dir_.File("config");
    options.cluster_zone = N("cluster.local.");
    options.flag_nameservers = std::move(flag_nameservers);
    options.resolv_conf = dir_.File("resolv.conf");
    config_ = std::make_unique<ForwardConfig>(options, metrics_,
                                              [this](std::shared_ptr<const UpstreamRoutes> routes) {
                                                published.push_back(std::move(routes));
                                              });
    return *config_;
  }

  void Key(const std::string& key, const std::string& value) {
    Write(dir_.File("config/" + key), value);
  }
  void ResolvConf(const std::string& text) { Write(dir_.File("resolv.conf"), text); }
  std::string Path(const std::string& key) const { return dir_.File("config/" + key); }

  double Metric(const std::string& sample) {
    auto parsed = metrics::ParseText(registry_.Render());
    REQUIRE(parsed);
    auto it = parsed->samples.find(sample);
    return it == parsed->samples.end() ? 0 : it->second;
  }

  std::string Routes() const { return published.empty() ? "" : published.back()->ToString(); }

  std::vector<std::shared_ptr<const UpstreamRoutes>> published;

 private:
  TempDir dir_;
  metrics::Registry registry_;
  ForwardMetrics metrics_{registry_, nullptr};
  std::unique_ptr<ForwardConfig> config_;
};

}  // namespace

TEST_CASE("the ConfigMap directory is applied, re-read, and an invalid version rejected",
          "[kubedns][forward-config]") {
  Fixture f;
  ForwardConfig& config = f.Make();
  config.Poll(HostResolver());
  REQUIRE(f.published.size() == 1);
  CHECK(f.Routes() == "stubs: {}; default (resolv.conf): [10.53.0.1#53]");
  CHECK(f.Metric(R"(kdns_kubedns_forward_config_reloads_total{result="applied"})") == 1);
  CHECK(f.Metric("kdns_kubedns_forward_default_upstreams") == 1);

  f.Key("stubDomains", R"({"acme.local": ["10.0.0.1:5353"]})");
  f.Key("upstreamNameservers", R"(["10.0.0.2"])");
  config.Poll(HostResolver());
  REQUIRE(f.published.size() == 2);
  CHECK(f.Routes() ==
        "stubs: {acme.local.=[10.0.0.1#5353]}; default (upstreamNameservers): [10.0.0.2#53]");
  CHECK(f.Metric("kdns_kubedns_forward_stub_domains") == 1);

  // Nothing changed: nothing published, nothing counted.
  config.Poll(HostResolver());
  CHECK(f.published.size() == 2);
  CHECK(f.Metric(R"(kdns_kubedns_forward_config_reloads_total{result="applied"})") == 2);

  // Invalid: rejected once, the previous routes stay.
  f.Key("upstreamNameservers", R"(["10.0.0.2", "not-an-ip"])");
  config.Poll(HostResolver());
  config.Poll(HostResolver());
  CHECK(f.published.size() == 2);
  CHECK(f.Metric(R"(kdns_kubedns_forward_config_reloads_total{result="rejected"})") == 1);
  CHECK(f.Metric("kdns_kubedns_forward_config_error") == 1);
  CHECK(config.routes()->default_route().upstreams.ToString() == "10.0.0.2#53");

  // Fixed: applied, the error gauge clears.
  f.Key("upstreamNameservers", R"(["10.0.0.3"])");
  config.Poll(HostResolver());
  REQUIRE(f.published.size() == 3);
  CHECK(f.Routes() ==
        "stubs: {acme.local.=[10.0.0.1#5353]}; default (upstreamNameservers): [10.0.0.3#53]");
  CHECK(f.Metric("kdns_kubedns_forward_config_error") == 0);

  // Keys removed (the ConfigMap emptied): back to resolv.conf, which is re-read too.
  f.ResolvConf("nameserver 10.53.0.9\n");
  f.Key("upstreamNameservers", "null");
  f.Key("stubDomains", "{}");
  config.Poll(HostResolver());
  REQUIRE(f.published.size() == 4);
  CHECK(f.Routes() == "stubs: {}; default (resolv.conf): [10.53.0.9#53]");
}

TEST_CASE("--nameservers comes between upstreamNameservers and resolv.conf",
          "[kubedns][forward-config]") {
  Fixture f;
  ForwardConfig& config = f.Make({*loop::SocketAddress::Parse("10.1.0.1:53")});
  config.Poll(HostResolver());
  CHECK(f.Routes() == "stubs: {}; default (--nameservers): [10.1.0.1#53]");
  f.Key("upstreamNameservers", R"(["10.0.0.2:5353"])");
  config.Poll(HostResolver());
  CHECK(f.Routes() == "stubs: {}; default (upstreamNameservers): [10.0.0.2#5353]");
}

TEST_CASE("an unreadable directory keeps the previous configuration", "[kubedns][forward-config]") {
  Fixture f;
  ForwardConfig& config = f.Make();
  f.Key("upstreamNameservers", R"(["10.0.0.2"])");
  config.Poll(HostResolver());
  REQUIRE(f.published.size() == 1);
  // A key that cannot be read: a directory where the file should be.
  std::filesystem::create_directory(f.Path("stubDomains"));
  config.Poll(HostResolver());
  config.Poll(HostResolver());
  CHECK(f.published.size() == 1);
  CHECK(f.Metric(R"(kdns_kubedns_forward_config_reloads_total{result="unreadable"})") == 1);
  CHECK(f.Metric("kdns_kubedns_forward_config_error") == 1);
  CHECK(config.routes()->default_route().upstreams.ToString() == "10.0.0.2#53");
  std::filesystem::remove(f.Path("stubDomains"));
  config.Poll(HostResolver());
  CHECK(f.Metric("kdns_kubedns_forward_config_error") == 0);
  CHECK(f.published.size() == 1);
}

TEST_CASE("stub host names are resolved by the resolver the config thread is given",
          "[kubedns][forward-config]") {
  Fixture f;
  ForwardConfig& config = f.Make();
  f.Key("stubDomains", R"({"acme.local": ["dns.acme.example"]})");
  config.Poll(HostResolver());  // start-up: not resolved yet, the stub has no server
  CHECK(f.Routes() == "stubs: {acme.local.=[]}; default (resolv.conf): [10.53.0.1#53]");
  int asked = 0;
  HostResolver resolver = [&](const dns::Name& host, std::string*) -> std::vector<IpAddress> {
    ++asked;
    CHECK(host == N("dns.acme.example."));
    return {*IpAddress::Parse("10.0.0.53")};
  };
  config.Poll(resolver);
  CHECK(asked == 1);
  CHECK(f.Routes() == "stubs: {acme.local.=[10.0.0.53#53]}; default (resolv.conf): [10.53.0.1#53]");
  // Re-resolved every pass, published only on a change.
  config.Poll(resolver);
  CHECK(asked == 2);
  CHECK(f.published.size() == 2);
}

TEST_CASE_METHOD(
    loop::testing::LoopFixture,
    "the config thread resolves stub host names with c-ares and re-reads a changed directory",
    "[kubedns][forward-config]") {
  TempDir dir;
  std::filesystem::create_directory(dir.File("config"));
  Write(dir.File("resolv.conf"), "nameserver 10.53.0.1\n");
  Write(dir.File("config/stubDomains"), R"({"acme.local": ["dns.acme.example"]})");
  upstream::testing::FakeUpstream kubedns(loop, 53);  // answers A 192.0.2.53
  metrics::Registry registry;
  ForwardMetrics metrics(registry, nullptr);
  std::mutex mu;
  std::string routes;  // the last published, guarded by mu
  ForwardConfig::Options options;
  options.config_dir = dir.File("config");
  options.period_ms = 600'000;  // only inotify can notice the change below in time
  options.cluster_zone = N("cluster.local.");
  options.resolv_conf = dir.File("resolv.conf");
  ForwardConfig config(options, metrics,
                       [&](const std::shared_ptr<const UpstreamRoutes>& published) {
                         std::lock_guard lock(mu);
                         routes = published->ToString();
                       });
  auto last = [&] {
    std::lock_guard lock(mu);
    return routes;
  };
  config.Start(kubedns.address());
  REQUIRE(loop::testing::RunUntil(
      loop, [&] { return last().find("192.0.2.53#53") != std::string::npos; }, 10'000));
  CHECK(last() == "stubs: {acme.local.=[192.0.2.53#53]}; default (resolv.conf): [10.53.0.1#53]");
  REQUIRE_FALSE(kubedns.queries().empty());
  CHECK(kubedns.queries().front().message.questions.front().name == N("dns.acme.example."));

  Write(dir.File("config/upstreamNameservers"), R"(["10.0.0.2"])");
  REQUIRE(loop::testing::RunUntil(
      loop, [&] { return last().find("10.0.0.2#53") != std::string::npos; }, 10'000));
  config.Stop();
}

}  // namespace kdns::kubedns

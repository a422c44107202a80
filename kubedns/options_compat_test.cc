// Tests of kube-dns's old kubedns flags: each still means what it did, with a warning naming
// its new form, or is refused with what to do instead.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/k8s/testing.h"
#include "kubedns/options.h"
#include "kubedns/options_testing.h"

namespace kdns::kubedns {
namespace {

using k8s::testing::Env;
using testing::ErrorOf;
using testing::Offline;

TEST_CASE("kubedns's old --metrics-port still sets the metrics port, with a warning",
          "[kubedns][options]") {
  Options options;
  std::string error;
  FlagValues flags = Offline();
  flags.metrics_port = 9154;
  REQUIRE(BuildOptions(flags, Env({{"PROMETHEUS_PORT", "9153"}}), &options, &error));
  CHECK(options.server.metrics_address.port() == 9154);
  CHECK(options.warnings ==
        std::vector<std::string>{"--metrics-port is deprecated: it is --prometheus-port"});
  flags.prometheus_port = 9154;  // both, agreeing
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.metrics_address.port() == 9154);
  flags.prometheus_port = 9155;
  REQUIRE_FALSE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(error == "--metrics-port=9154 is the old name of --prometheus-port=9155: give one of them");
}

TEST_CASE("kube-dns's deprecated --config-map maps to the mounted directory, with a warning",
          "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.config_map = "kube-dns";
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  CHECK(options.server.config_dir == "/kube-dns-config");
  REQUIRE(options.warnings.size() == 1);
  CHECK(options.warnings[0].starts_with("--config-map=kube-dns is deprecated"));
  SECTION("with --config-dir, the directory is read and the flag is ignored, loudly") {
    flags.config_dir = "/etc/kube-dns";
    Options both;
    REQUIRE(BuildOptions(flags, Env({}), &both, &error));
    CHECK(both.server.config_dir == "/etc/kube-dns");
    REQUIRE(both.warnings.size() == 1);
    CHECK(both.warnings[0] ==
          "--config-map=kube-dns is ignored: --config-dir=/etc/kube-dns is read (mount the "
          "ConfigMap there)");
  }
  SECTION("without --config-map nothing is warned") {
    Options plain;
    REQUIRE(BuildOptions(Offline(), Env({}), &plain, &error));
    CHECK(plain.warnings.empty());
    CHECK(plain.server.config_dir.empty());
  }
}

TEST_CASE("the old --cache-dump-address is --debug-address, with a warning", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.cache_dump_address = "127.0.0.1:10057";
  SECTION("alone") {}
  SECTION("with --debug-address at the same address") { flags.debug_address = "127.0.0.1:10057"; }
  Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, Env({}), &options, &error));
  REQUIRE(options.server.debug_address.has_value());
  CHECK(options.server.debug_address->ToString() == "127.0.0.1:10057");
  REQUIRE(options.warnings.size() == 1);
  CHECK(
      options.warnings[0].starts_with("--cache-dump-address is deprecated: it is "
                                      "--debug-address"));
}

TEST_CASE("--federations is refused with what to do instead", "[kubedns][options]") {
  FlagValues flags = Offline();
  flags.federations = "myfed=example.com";
  const std::string error = ErrorOf(flags);
  CHECK(error.starts_with("--federations=myfed=example.com: Kubernetes federation v1 is retired"));
  CHECK(error.find("remove the flag") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

}  // namespace
}  // namespace kdns::kubedns

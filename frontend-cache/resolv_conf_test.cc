#include "frontend-cache/resolv_conf.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::frontend {
namespace {

// The parsing itself is tested in common/upstream/resolv_conf_test.cc.
TEST_CASE("resolv.conf nameservers become port-53 upstreams", "[frontend][resolv]") {
  ResolvConf conf = ParseResolvConf(
      "nameserver 10.96.0.10\n"
      "nameserver 2001:db8::53\n"
      "nameserver dns.example\n");
  REQUIRE(conf.nameservers.size() == 2);
  CHECK(conf.nameservers[0].ToString() == "10.96.0.10#53");
  CHECK(conf.nameservers[1].ToString() == "2001:db8::53#53");
  CHECK(conf.skipped_lines == std::vector<std::string>{"nameserver dns.example"});
}

TEST_CASE("A missing resolv.conf is an error for frontend-cache too", "[frontend][resolv]") {
  ResolvConf conf;
  std::string error;
  CHECK_FALSE(LoadResolvConf("/nonexistent/resolv.conf", &conf, &error));
  CHECK(error == "cannot read /nonexistent/resolv.conf: No such file or directory");
}

}  // namespace
}  // namespace kdns::frontend

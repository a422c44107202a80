#include "common/upstream/resolv_conf.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/upstream/upstream_address.h"

namespace kdns::upstream {
namespace {

TEST_CASE("resolv.conf gives nameserver lines, v4 and v6", "[upstream][resolv]") {
  ResolvConf conf = ParseResolvConf(
      "# generated\n"
      "search default.svc.cluster.local svc.cluster.local\n"
      "nameserver 10.96.0.10\n"
      "  nameserver\t2001:db8::53   # comment\n"
      "options ndots:5\n"
      "; nameserver 9.9.9.9\n"
      "nameserver fe80::1%eth0\n"
      "nameserver dns.example\n"
      "nameserver 1.1.1.1 extra\n"
      "domain example\r\n"
      "nameserver 8.8.8.8");
  REQUIRE(conf.nameservers.size() == 3);
  CHECK(conf.nameservers[0].HostString() == "10.96.0.10");
  CHECK(conf.nameservers[1].HostString() == "2001:db8::53");
  CHECK(conf.nameservers[2].HostString() == "8.8.8.8");
  CHECK(conf.skipped_lines == std::vector<std::string>{"nameserver fe80::1%eth0",
                                                       "nameserver dns.example",
                                                       "nameserver 1.1.1.1 extra"});
}

TEST_CASE("resolv.conf's last search or domain line is the search list", "[upstream][resolv]") {
  CHECK(ParseResolvConf("nameserver 10.0.0.1\n").search.empty());
  CHECK(ParseResolvConf("search a.example b.example\t c.example # d.example\n").search ==
        std::vector<std::string>{"a.example", "b.example", "c.example"});
  // As the C library: a later line replaces an earlier one, domain takes one name.
  CHECK(ParseResolvConf("search a.example\ndomain node.example extra\n").search ==
        std::vector<std::string>{"node.example"});
  CHECK(ParseResolvConf("domain node.example\nsearch a.example b.example\n").search ==
        std::vector<std::string>{"a.example", "b.example"});
}

TEST_CASE("resolv.conf nameservers become port-53 upstreams", "[upstream][resolv]") {
  ResolvConf conf = ParseResolvConf(
      "nameserver 10.96.0.10\n"
      "nameserver 2001:db8::53\n"
      "nameserver dns.example\n");
  REQUIRE(conf.nameservers.size() == 2);
  CHECK(FormatUpstreamAddress(conf.nameservers[0]) == "10.96.0.10#53");
  CHECK(FormatUpstreamAddress(conf.nameservers[1]) == "2001:db8::53#53");
  CHECK(conf.skipped_lines == std::vector<std::string>{"nameserver dns.example"});
}

TEST_CASE("A missing resolv.conf is an error", "[upstream][resolv]") {
  ResolvConf conf;
  std::string error;
  CHECK_FALSE(LoadResolvConf("/nonexistent/resolv.conf", &conf, &error));
  CHECK(error == "cannot read /nonexistent/resolv.conf: No such file or directory");
}

}  // namespace
}  // namespace kdns::upstream

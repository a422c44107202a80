#include "frontend-cache/hosts_file.h"

#include <catch2/catch.hpp>

#include "common/dns/testing.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;

TEST_CASE("a hosts file gives each address its names, comments and blank lines aside",
          "[frontend][hosts]") {
  const HostsFile file = ParseHostsFile(
      "# a comment\n"
      "127.0.0.1\tlocalhost\n"
      "\n"
      "10.0.0.5   web.Example.TEST web   # trailing comment\r\n"
      "fd00::5 web.example.test");
  CHECK(file.skipped.empty());
  REQUIRE(file.entries.size() == 3);
  CHECK(file.entries[0] == HostsEntry{*IpAddress::Parse("127.0.0.1"), {N("localhost")}});
  // Names are kept lower-cased: lookups ignore case.
  CHECK(file.entries[1] ==
        HostsEntry{*IpAddress::Parse("10.0.0.5"), {N("web.example.test"), N("web")}});
  CHECK(file.entries[2] == HostsEntry{*IpAddress::Parse("fd00::5"), {N("web.example.test")}});
}

TEST_CASE("a bad hosts line is skipped and reported, the rest kept", "[frontend][hosts]") {
  const HostsFile file = ParseHostsFile(
      "10.0.0.300 bad.test\n"
      "10.0.0.1\n"
      "10.0.0.2 a..b\n"
      "10.0.0.3 good.test\n");
  REQUIRE(file.entries.size() == 1);
  CHECK(file.entries[0].names == std::vector<dns::Name>{N("good.test")});
  CHECK(file.skipped == std::vector<std::string>{"line 1: \"10.0.0.300\" is not an IP address",
                                                 "line 2: no name after 10.0.0.1",
                                                 "line 3: \"a..b\" is not a host name"});
}

TEST_CASE("a hosts file that cannot be read is an error naming it", "[frontend][hosts]") {
  HostsFile file;
  std::string error;
  CHECK_FALSE(LoadHostsFile("/nonexistent/hosts", &file, &error));
  CHECK(error.starts_with("/nonexistent/hosts: cannot read it: "));
}

}  // namespace
}  // namespace kdns::frontend

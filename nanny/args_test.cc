#include "nanny/args.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace kdns::nanny {
namespace {

using Args = std::vector<std::string>;

SplitArgs Split(const Args& args) {
  std::vector<const char*> argv = {"nanny"};
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return SplitAtDoubleDash(static_cast<int>(argv.size()), argv.data());
}

ListenSpec Listen(const Args& args) {
  ListenSpec spec;
  std::string error;
  INFO(error);
  REQUIRE(ParseListenSpec(args, &spec, &error));
  return spec;
}

std::vector<std::string> Addresses(const ListenSpec& spec) {
  std::vector<std::string> out;
  for (const auto& address : spec.addresses) out.push_back(address.ToString());
  return out;
}

}  // namespace

TEST_CASE("arguments split at the first \"--\" as kube-dns's ExtractDnsmasqArgs", "[nanny]") {
  // pkg/dnsmasq/nanny_test.go TestExtractDnsmasqArgs, argv[0] kept with the nanny's part.
  auto [args, own, child] = GENERATE(table<Args, Args, Args>({
      {{}, {"nanny"}, {}},
      {{"a"}, {"nanny", "a"}, {}},
      {{"a", "--"}, {"nanny", "a"}, {}},
      {{"a", "--", "b"}, {"nanny", "a"}, {"b"}},
      {{"--", "b"}, {"nanny"}, {"b"}},
      {{"a", "b", "--", "c", "d"}, {"nanny", "a", "b"}, {"c", "d"}},
      // Only the first "--" splits; a later one is the child's.
      {{"-v=2", "--", "-k", "--", "x"}, {"nanny", "-v=2"}, {"-k", "--", "x"}},
  }));
  CAPTURE(args);
  SplitArgs split = Split(args);
  CHECK(split.own == own);
  CHECK(split.child == child);
}

TEST_CASE("the child's dnsmasq options tell which sockets the nanny holds", "[nanny]") {
  SECTION("defaults: port 53 on every IPv4 address") {
    CHECK(Addresses(Listen({"-k", "--cache-size=1000"})) == Args{"0.0.0.0:53"});
  }
  SECTION("every spelling of --port and --listen-address") {
    auto [args, addresses] = GENERATE(table<Args, Args>({
        {{"--port=5353", "--listen-address=127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"--port", "5353", "--listen-address", "127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"-p", "5353", "-a", "127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"-p5353", "-a127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"--listen-address=127.0.0.1,::1", "--port=5353"}, {"127.0.0.1:5353", "[::1]:5353"}},
        {{"-a", "127.0.0.1", "-a", "127.0.0.2", "-a", "127.0.0.1"},
         {"127.0.0.1:53", "127.0.0.2:53"}},
        {{"--port=0", "-a", "127.0.0.1"}, {"127.0.0.1:0"}},
        // The last --port wins, as in dnsmasq.
        {{"--port=1", "--port=2", "-a", "127.0.0.1"}, {"127.0.0.1:2"}},
        // Other options and their values are left alone.
        {{"--server", "/p/127.0.0.1#1", "--address=/a/1.2.3.4", "-a", "127.0.0.1"},
         {"127.0.0.1:53"}},
    }));
    CAPTURE(args);
    CHECK(Addresses(Listen(args)) == addresses);
  }
  SECTION("a malformed value is a start-up error naming the option") {
    auto args = GENERATE(Args{"--port=x"}, Args{"--port=65536"}, Args{"--port"}, Args{"-p"},
                         Args{"--listen-address=localhost"}, Args{"-a", "1.2.3.4,"},
                         Args{"--listen-address"});
    CAPTURE(args);
    ListenSpec spec;
    std::string error;
    CHECK_FALSE(ParseListenSpec(args, &spec, &error));
    CHECK_THAT(error, Catch::StartsWith("child argument --"));
  }
}

TEST_CASE("a long option is found with or without its value", "[nanny]") {
  CHECK(HasLongOption({"-k", "--servers-file=/x"}, "servers-file"));
  CHECK(HasLongOption({"--servers-file", "/x"}, "servers-file"));
  CHECK_FALSE(HasLongOption({"--servers-filex=/x", "servers-file"}, "servers-file"));
}

}  // namespace kdns::nanny

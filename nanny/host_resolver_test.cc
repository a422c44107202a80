#include "nanny/host_resolver.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "common/loop/loop_test_util.h"
#include "common/upstream/testing.h"

namespace kdns::nanny {
namespace {

using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;

struct Result {
  bool done = false;
  std::optional<IpAddress> address;
  std::string error;
};

HostResolver::Callback Into(Result& result) {
  return [&result](const std::optional<IpAddress>& address, const std::string& error) {
    result.done = true;
    result.address = address;
    result.error = error;
  };
}

}  // namespace

TEST_CASE("a name is asked of the one server given, and its address comes back", "[nanny]") {
  loop::Loop loop;
  {
    upstream::testing::FakeUpstream kubedns(loop, 53);  // answers A 192.0.2.53
    HostResolver::Options options;
    options.server = kubedns.address();
    options.timeout_ms = 200;
    options.tries = 1;
    std::string error;
    auto resolver = HostResolver::Create(loop, options, &error);
    REQUIRE(resolver != nullptr);
    Result result;
    resolver->Resolve("ns.kube-system.svc.cluster.local", Into(result));
    REQUIRE(RunUntil(loop, [&] { return result.done; }));
    REQUIRE(result.address.has_value());
    CHECK(result.address->ToString() == "192.0.2.53");
    REQUIRE_FALSE(kubedns.queries().empty());
    CHECK(kubedns.queries().front().message.questions.front().name.ToText() ==
          "ns.kube-system.svc.cluster.local.");  // no search list applied

    SECTION("a server that does not answer: an error after the timeout") {
      kubedns.set_behaviour(upstream::testing::Behaviour::kSilent);
      Result silent;
      resolver->Resolve("gone.svc.cluster.local", Into(silent));
      REQUIRE(RunUntil(loop, [&] { return silent.done; }));
      CHECK_FALSE(silent.address.has_value());
      CHECK_THAT(silent.error, Catch::StartsWith("gone.svc.cluster.local: "));
      CHECK(resolver->pending() == 0);
    }
    SECTION("NXDOMAIN is an error") {
      kubedns.set_behaviour(upstream::testing::Behaviour::kRefused);
      Result refused;
      resolver->Resolve("x.svc.cluster.local", Into(refused));
      REQUIRE(RunUntil(loop, [&] { return refused.done; }));
      CHECK_FALSE(refused.address.has_value());
    }
    SECTION("destroying the resolver drops pending lookups without calling them") {
      kubedns.set_behaviour(upstream::testing::Behaviour::kSilent);
      Result dropped;
      resolver->Resolve("slow.svc.cluster.local", Into(dropped));
      resolver.reset();
      CHECK_FALSE(dropped.done);
    }
  }
  RequireClosesClean(loop);
}

TEST_CASE("the system resolver reads the hosts file and numeric names", "[nanny]") {
  loop::Loop loop;
  {
    std::string error;
    auto resolver = HostResolver::Create(loop, {}, &error);
    REQUIRE(resolver != nullptr);
    Result numeric, local;
    resolver->Resolve("192.0.2.7", Into(numeric));
    resolver->Resolve("localhost", Into(local));
    REQUIRE(RunUntil(loop, [&] { return numeric.done && local.done; }));
    REQUIRE(numeric.address.has_value());
    CHECK(numeric.address->ToString() == "192.0.2.7");
    REQUIRE(local.address.has_value());
    CHECK((local.address->ToString() == "127.0.0.1" || local.address->ToString() == "::1"));
  }
  RequireClosesClean(loop);
}

}  // namespace kdns::nanny

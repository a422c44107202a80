#include "nanny/stub_hosts.h"

#include <catch2/catch.hpp>

#include "common/loop/loop_test_util.h"
#include "common/upstream/testing.h"

namespace kdns::nanny {
namespace {

using loop::testing::RunUntil;

}  // namespace

TEST_CASE("names under the cluster domain are told apart label by label", "[nanny]") {
  auto [name, domain, under] = GENERATE(table<std::string, std::string, bool>({
      {"ns.kube-system.svc.cluster.local", "cluster.local", true},
      {"cluster.local", "cluster.local", true},
      {"ns.svc.cluster.local.", "cluster.local.", true},
      {"ns.mycluster.local", "cluster.local", false},
      {"ns.cluster.local.example", "cluster.local", false},
      {"ns.example", "cluster.local", false},
      {"ns.example", "", false},
  }));
  CAPTURE(name, domain);
  CHECK(StubHosts::UnderDomain(name, domain) == under);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "stub hosts: cluster names go to kubedns, a failed lookup keeps the last address",
                 "[nanny]") {
  upstream::testing::FakeUpstream kubedns(loop, 10);  // A 192.0.2.10
  upstream::testing::FakeUpstream system(loop, 20);   // A 192.0.2.20
  ares::Channel::Options cluster_options;
  cluster_options.servers = {kubedns.address()};
  cluster_options.timeout_ms = 100;
  cluster_options.tries = 1;
  ares::Channel::Options system_options = cluster_options;
  system_options.servers = {system.address()};  // stands in for the system resolver
  std::string error;
  auto cluster = ares::Channel::Create(loop, cluster_options, &error);
  auto other = ares::Channel::Create(loop, system_options, &error);
  REQUIRE(cluster != nullptr);
  REQUIRE(other != nullptr);
  StubHosts hosts(*cluster, *other, "cluster.local");

  const std::vector<std::string> names = {"dns.corp.example", "ns.default.svc.cluster.local"};
  CHECK_FALSE(hosts.Known(names));
  int done = 0;
  bool changed = false;
  hosts.Resolve(names, [&](bool c) {
    ++done;
    changed = c;
  });
  REQUIRE(RunUntil(loop, [&] { return done == 1; }));
  CHECK(changed);
  CHECK(hosts.Known(names));
  CHECK(hosts.addresses().at("ns.default.svc.cluster.local").ToString() == "192.0.2.10");
  CHECK(hosts.addresses().at("dns.corp.example").ToString() == "192.0.2.20");

  // Same answers: nothing changed.
  hosts.Resolve(names, [&](bool c) {
    ++done;
    changed = c;
  });
  REQUIRE(RunUntil(loop, [&] { return done == 2; }));
  CHECK_FALSE(changed);

  // kubedns goes quiet: the last address stays.
  kubedns.set_behaviour(upstream::testing::Behaviour::kSilent);
  hosts.Resolve(names, [&](bool c) {
    ++done;
    changed = c;
  });
  REQUIRE(RunUntil(loop, [&] { return done == 3; }));
  CHECK_FALSE(changed);
  CHECK(hosts.addresses().at("ns.default.svc.cluster.local").ToString() == "192.0.2.10");
  CHECK(hosts.lookups_failed() >= 1);

  // A name that left the configuration is forgotten; no names: done at once.
  hosts.Resolve({}, [&](bool c) {
    ++done;
    changed = c;
  });
  CHECK(done == 4);
  CHECK(hosts.addresses().empty());
}

}  // namespace kdns::nanny

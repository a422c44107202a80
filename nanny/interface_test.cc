#include "nanny/interface.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "nanny/fake_command_runner.h"

namespace kdns::nanny {
namespace {

using testing::FakeCommandRunner;

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

// A fake kernel: the interfaces the `ip` commands change, read back by the reader.
struct FakeLinks {
  CommandResult operator()(const std::vector<std::string>& argv) {
    if (argv[1] == "link" && argv[2] == "add") {
      if (!dummy_supported) return {2, "", "Error: Unknown device type.\n"};
      links[argv[3]] = {true, false, {}};
    } else if (argv[1] == "link" && argv[2] == "set") {
      links[argv[3]].up = true;
    } else if (argv[1] == "link" && argv[2] == "del") {
      links.erase(argv[3]);
    } else if (argv[2] == "addr") {
      // ip -4|-6 addr add|del PREFIX dev NAME [nodad]
      InterfaceState& link = links[argv[6]];
      const std::string& prefix = argv[4];
      const IpAddress address = *IpAddress::Parse(prefix.substr(0, prefix.find('/')));
      if (argv[3] == "add") {
        link.addresses.push_back(address);
      } else {
        std::erase(link.addresses, address);
      }
    }
    return {0, "", ""};
  }
  InterfaceState Read(const std::string& name) const {
    auto found = links.find(name);
    return found == links.end() ? InterfaceState{} : found->second;
  }
  std::map<std::string, InterfaceState> links;
  bool dummy_supported = true;
};

struct Fixture {
  Fixture() { runner.handler = std::ref(kernel); }
  LocalInterface Make(const std::string& name, std::vector<IpAddress> addresses) {
    return LocalInterface(name, std::move(addresses), runner,
                          [this](const std::string& n) { return kernel.Read(n); });
  }
  FakeLinks kernel;
  FakeCommandRunner runner;
};

}  // namespace

TEST_CASE("missing addresses keep the order they were asked in", "[nanny][interface]") {
  CHECK(MissingAddresses({Ip("169.254.20.10"), Ip("10.96.0.10"), Ip("fd00::a")},
                         {Ip("10.96.0.10")}) ==
        std::vector<IpAddress>{Ip("169.254.20.10"), Ip("fd00::a")});
  CHECK(MissingAddresses({Ip("10.96.0.10")}, {Ip("10.96.0.10"), Ip("127.0.0.1")}).empty());
}

TEST_CASE("a missing interface is created as a dummy link and removed at teardown",
          "[nanny][interface]") {
  Fixture f;
  LocalInterface link = f.Make("nodelocaldns", {Ip("169.254.20.10"), Ip("fd00::a")});
  std::string error;
  REQUIRE(link.Setup(&error));
  CHECK(link.created());
  CHECK(link.ok());
  CHECK(f.runner.commands ==
        std::vector<std::string>{"ip link add nodelocaldns type dummy",
                                 "ip -4 addr add 169.254.20.10/32 dev nodelocaldns",
                                 "ip -6 addr add fd00::a/128 dev nodelocaldns nodad",
                                 "ip link set nodelocaldns up"});
  REQUIRE(link.Teardown(&error));
  CHECK(f.runner.commands.back() == "ip link del nodelocaldns");
  CHECK_FALSE(f.kernel.Read("nodelocaldns").exists);
}

TEST_CASE("an existing interface is used; teardown removes only our addresses",
          "[nanny][interface]") {
  Fixture f;
  f.kernel.links["lo"] = {true, true, {Ip("127.0.0.1"), Ip("10.96.0.10")}};
  LocalInterface link = f.Make("lo", {Ip("169.254.20.10"), Ip("10.96.0.10")});
  std::string error;
  REQUIRE(link.Setup(&error));
  CHECK_FALSE(link.created());
  CHECK(f.runner.commands == std::vector<std::string>{"ip -4 addr add 169.254.20.10/32 dev lo"});
  REQUIRE(link.Teardown(&error));
  CHECK(f.kernel.Read("lo").addresses == std::vector<IpAddress>{Ip("127.0.0.1")});
  CHECK(f.kernel.Read("lo").exists);
}

TEST_CASE("without the dummy link type a missing interface is a clear start-up error",
          "[nanny][interface]") {
  Fixture f;
  f.kernel.dummy_supported = false;
  LocalInterface link = f.Make("nodelocaldns", {Ip("169.254.20.10")});
  std::string error;
  CHECK_FALSE(link.Setup(&error));
  CHECK(error ==
        "-interfacename nodelocaldns: no such interface, and it cannot be created as a dummy "
        "link (ip link add nodelocaldns type dummy: exit 2: Error: Unknown device type.); name "
        "an existing interface, or -setupinterface=false");
}

TEST_CASE("the sync puts back a deleted address and brings the link up again",
          "[nanny][interface]") {
  Fixture f;
  f.kernel.links["veth0"] = {true, true, {}};
  LocalInterface link = f.Make("veth0", {Ip("169.254.20.10"), Ip("fd00::a")});
  std::string error;
  REQUIRE(link.Setup(&error));
  CHECK(link.Sync(&error) == SyncOutcome::kInPlace);
  std::erase(f.kernel.links["veth0"].addresses, Ip("fd00::a"));
  f.runner.commands.clear();
  CHECK(link.Sync(&error) == SyncOutcome::kRepaired);
  CHECK(f.runner.commands ==
        std::vector<std::string>{"ip -6 addr add fd00::a/128 dev veth0 nodad"});
  f.kernel.links["veth0"].up = false;
  CHECK(link.Sync(&error) == SyncOutcome::kRepaired);
  CHECK(link.ok());
  // An interface we did not create that vanished is not ours to create.
  f.kernel.links.erase("veth0");
  CHECK(link.Sync(&error) == SyncOutcome::kFailed);
  CHECK(error == "interface veth0 is gone");
  CHECK_FALSE(link.ok());
}

TEST_CASE("a dummy link we created is created again when it vanishes", "[nanny][interface]") {
  Fixture f;
  LocalInterface link = f.Make("nodelocaldns", {Ip("169.254.20.10")});
  std::string error;
  REQUIRE(link.Setup(&error));
  f.kernel.links.erase("nodelocaldns");
  CHECK(link.Sync(&error) == SyncOutcome::kRepaired);
  CHECK(f.kernel.Read("nodelocaldns").addresses == std::vector<IpAddress>{Ip("169.254.20.10")});
}

TEST_CASE("the loopback interface's state is read from the kernel", "[nanny][interface]") {
  const InterfaceState lo = ReadInterface("lo");
  CHECK(lo.exists);
  CHECK_FALSE(ReadInterface("kdns-no-such-if").exists);
}

}  // namespace kdns::nanny

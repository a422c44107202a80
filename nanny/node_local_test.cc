#include "nanny/node_local.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "nanny/atomic_file.h"
#include "nanny/fake_command_runner.h"
#include "test/support/fake_dns_server.h"
#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

using loop::testing::RunUntil;
using testing::FakeCommandRunner;
using testing::Joined;

// A fake node: one interface "lo" with 127.0.0.1 (the node-local address of these tests, so
// the health endpoint and the probe can use it), our nftables table, and the `ip` and `nft`
// commands that change them.
struct FakeNode {
  CommandResult operator()(const std::vector<std::string>& argv) {
    const std::string line = Joined(argv);
    if (nft_fails && line.starts_with("nft ")) return {1, "", "Error: Operation not permitted"};
    if (line.starts_with("nft -f ")) {
      table = true;
    } else if (line.starts_with("nft list table inet kdns-nodelocal")) {
      if (!table) return {1, "", "Error: No such file or directory"};
      return {0, "table inet kdns-nodelocal { ... }\n", ""};
    } else if (line == "nft delete table inet kdns-nodelocal") {
      table = false;
    } else if (line == "ip -4 addr add 127.0.0.1/32 dev lo") {
      lo.addresses.push_back(*IpAddress::Parse("127.0.0.1"));
    } else if (line == "ip -4 addr del 127.0.0.1/32 dev lo") {
      lo.addresses.clear();
    }
    return {0, "", ""};
  }
  InterfaceState lo{true, true, {*IpAddress::Parse("127.0.0.1")}};
  bool table = false;
  bool nft_fails = false;
};

// libnftables in a test: records what is run; `fails` makes the next runs fail.
// What removes the chains that capture queries (Firewall::RemoveCapture).
constexpr const char* kRemoveCapture =
    "nft delete chain inet kdns-nodelocal raw-prerouting; "
    "delete chain inet kdns-nodelocal raw-output-queries; ";

struct FakeNftSession final : public NftSession {
  explicit FakeNftSession(std::vector<std::string>* runs, bool* table, bool fails)
      : runs_(runs), table_(table), fails_(fails) {}
  bool Run(const std::string& commands, std::string* error) override {
    runs_->push_back(commands);
    if (fails_) {
      *error = "Error: Could not process rule: Operation not supported";
      return false;
    }
    *table_ = !commands.starts_with("delete table");
    return true;
  }
  std::vector<std::string>* runs_;
  bool* table_;
  bool fails_;
};

// The unix sockets the kernel lists, with another node cache's presence in it.
constexpr const char* kOtherNodeCache =
    "Num       RefCount Protocol Flags    Type St Inode Path\n"
    "0000000000000000: 00000002 00000000 00000000 0002 01 43110 @kdns-nodelocal/0badcafe\n";

struct Fixture {
  Fixture() {
    runner.handler = std::ref(node);
    runner.installed = {"nft", "ip"};
  }
  ~Fixture() { node_local.reset(); }

  void Make(uint16_t dns_port = 9, bool skip_teardown = false) {
    NodeLocal::Options options;
    options.addresses = {*IpAddress::Parse("127.0.0.1")};
    options.dns_port = dns_port;
    options.interface_name = "lo";
    options.firewall = FirewallChoice::kNftables;
    options.health_port = 0;  // the kernel's choice (the flag allows 1-65535)
    options.ruleset_file = dir.File("nodelocal.nft");
    options.skip_teardown = skip_teardown;
    options.probe_interval_ms = 50;
    options.healthy_within_ms = 300;
    options.unix_listing = dir.File("unix");                     // absent: no other node cache
    options.tcp_migrate_req_file = dir.File("tcp_migrate_req");  // never the host's
    if (owned_table) {
      options.open_nft_session = [this](std::string*) -> std::unique_ptr<NftSession> {
        return std::make_unique<FakeNftSession>(&session_runs, &node.table, session_fails);
      };
    } else {
      options.open_nft_session = nullptr;  // the shared table, through `nft -f`
    }
    node_local = std::make_unique<NodeLocal>(
        loop, options, runner,
        [this](const std::string& name) { return name == "lo" ? node.lo : InterfaceState{}; });
  }

  void Start(uint16_t dns_port = 9, bool skip_teardown = false) {
    Make(dns_port, skip_teardown);
    std::string error;
    INFO(error);
    REQUIRE(node_local->SetUpInterface(&error));
    REQUIRE(node_local->Start(&error));
  }

  kdns::testing::TempDir dir;
  loop::Loop loop;
  FakeNode node;
  FakeCommandRunner runner;
  bool owned_table = false;
  bool session_fails = false;
  std::vector<std::string> session_runs;
  std::unique_ptr<NodeLocal> node_local;
};

}  // namespace

TEST_CASE("node-local start installs the rules and says so in the metrics", "[nanny][node-local]") {
  Fixture f;
  f.Start();
  CHECK(f.node.table);
  const NodeLocalMetrics& metrics = f.node_local->metrics();
  CHECK(metrics.rules_ok);
  CHECK(metrics.interface_ok);
  CHECK(metrics.firewall_backend == "nftables");
  CHECK(metrics.rule_repairs == 0);
  CHECK(metrics.address_repairs == 0);
  CHECK(f.node_local->health_addresses().size() == 1);
}

TEST_CASE("start turns net.ipv4.tcp_migrate_req on where it can, and says which",
          "[nanny][node-local]") {
  Fixture f;
  const std::string file = f.dir.File("tcp_migrate_req");
  std::string error;
  auto read = [&] {
    std::ifstream in(file);
    std::string value;
    in >> value;
    return value;
  };
  SECTION("off: turned on") {
    REQUIRE(WriteFileAtomically(file, "0\n", &error));
    f.Start();
    CHECK(read() == "1");
    CHECK(f.node_local->metrics().tcp_migrate_req);
  }
  SECTION("on: left alone") {
    REQUIRE(WriteFileAtomically(file, "1\n", &error));
    f.Start();
    CHECK(read() == "1");
    CHECK(f.node_local->metrics().tcp_migrate_req);
  }
  SECTION("a kernel without it (before 5.14): off, and start goes on") {
    f.Start();
    CHECK_FALSE(f.node_local->metrics().tcp_migrate_req);
    CHECK(f.node_local->metrics().rules_ok);
  }
}

TEST_CASE("the sync puts back what another agent deleted and counts it", "[nanny][node-local]") {
  Fixture f;
  f.Start();
  f.node_local->Sync();
  CHECK(f.node_local->metrics().rule_repairs == 0);
  CHECK(f.node_local->metrics().address_repairs == 0);

  f.node.table = false;
  f.node_local->Sync();
  CHECK(f.node.table);
  CHECK(f.node_local->metrics().rule_repairs == 1);

  f.node.lo.addresses.clear();
  f.node_local->Sync();
  CHECK(f.node.lo.addresses.size() == 1);
  CHECK(f.node_local->metrics().address_repairs == 1);
  CHECK(f.node_local->metrics().interface_ok);
  CHECK(f.node_local->metrics().sync_errors == 0);
}

TEST_CASE("a sync that cannot repair counts an error and clears rules_ok", "[nanny][node-local]") {
  Fixture f;
  f.Start();
  f.node.table = false;
  f.node.nft_fails = true;
  f.node_local->Sync();
  CHECK(f.node_local->metrics().sync_errors == 1);
  CHECK_FALSE(f.node_local->metrics().rules_ok);
  f.node.nft_fails = false;
  f.node_local->Sync();
  CHECK(f.node_local->metrics().rules_ok);
  CHECK(f.node_local->metrics().rule_repairs == 1);
}

TEST_CASE("teardown removes the rules, then the addresses", "[nanny][node-local]") {
  Fixture f;
  f.Start();
  f.runner.commands.clear();
  f.node_local->Teardown();
  CHECK(f.runner.commands == std::vector<std::string>{kRemoveCapture,
                                                      "nft delete table inet kdns-nodelocal",
                                                      "ip -4 addr del 127.0.0.1/32 dev lo"});
  CHECK_FALSE(f.node.table);
  CHECK(f.node.lo.addresses.empty());
  // Once only; a sync after it changes nothing.
  f.node_local->Teardown();
  f.node_local->Sync();
  CHECK(f.runner.commands.size() == 3);
}

TEST_CASE("with -skipteardown the rules and addresses stay", "[nanny][node-local]") {
  Fixture f;
  f.Start(9, /*skip_teardown=*/true);
  f.runner.commands.clear();
  f.node_local->Teardown();
  CHECK(f.runner.commands.empty());
  CHECK(f.node.table);
  CHECK(f.node.lo.addresses.size() == 1);
}

TEST_CASE("health is OK while the child answers the probe, 503 when it stops",
          "[nanny][node-local]") {
  Fixture f;
  // The child: any reply counts (frontend-cache answers CHAOS version.bind. itself).
  auto child = std::make_unique<kdns::testing::FakeDnsServer>(
      f.loop, kdns::testing::AnswerRcode(dns::Rcode::kNotImp));
  f.Start(child->address().port());
  CHECK(RunUntil(f.loop, [&] { return f.node_local->healthy(); }));
  child.reset();
  CHECK(RunUntil(f.loop, [&] { return !f.node_local->healthy(); }));
}

TEST_CASE("the nftables table is the instance's own, owned, and written over its session",
          "[nanny][node-local]") {
  Fixture f;
  f.owned_table = true;
  f.Start();
  REQUIRE(f.session_runs.size() == 1);
  const std::string& ruleset = f.session_runs[0];
  const size_t name_at = ruleset.find("kdns-nodelocal-");
  REQUIRE(name_at != std::string::npos);
  const std::string table = ruleset.substr(name_at, std::string("kdns-nodelocal-").size() + 8);
  CHECK(ruleset.find("table inet " + table + " { flags owner; }\n") != std::string::npos);
  CHECK(ruleset.find("\tflags owner\n") != std::string::npos);
  CHECK(f.runner.RunWith("nft -f").empty());
  // Checked by listing it like any table; removed through the session (only its owner may).
  f.runner.commands.clear();
  f.node_local->Sync();
  CHECK(f.runner.commands == std::vector<std::string>{"nft list table inet " + table});
  f.node_local->Teardown();
  CHECK(f.session_runs.back() == "delete table inet " + table + "\n");
  CHECK_FALSE(f.node.table);
}

TEST_CASE("without an owned table (an older kernel) the shared table is written with nft -f",
          "[nanny][node-local]") {
  Fixture f;
  f.owned_table = true;
  f.session_fails = true;
  f.Start();
  CHECK(f.session_runs.size() == 1);
  CHECK(f.runner.RunWith("nft -f").size() == 1);
  CHECK(f.node.table);
}

TEST_CASE("-skipteardown keeps the shared table: an owned one would go with the process",
          "[nanny][node-local]") {
  Fixture f;
  f.owned_table = true;
  f.Start(9, /*skip_teardown=*/true);
  CHECK(f.session_runs.empty());
  CHECK(f.runner.RunWith("nft -f").size() == 1);
}

TEST_CASE("the capturing rules go when routing stops; the others and the addresses after",
          "[nanny][node-local]") {
  Fixture f;
  f.Start();
  f.runner.commands.clear();
  CHECK_FALSE(f.node_local->StopRouting());  // alone on the node
  // Our replies to what already reached us still leave untracked.
  CHECK(f.runner.commands == std::vector<std::string>{kRemoveCapture});
  CHECK(f.node.lo.addresses.size() == 1);
  f.node_local->Teardown();
  CHECK(f.runner.commands == std::vector<std::string>{kRemoveCapture,
                                                      "nft delete table inet kdns-nodelocal",
                                                      "ip -4 addr del 127.0.0.1/32 dev lo"});
  CHECK(f.node.lo.addresses.empty());
}

TEST_CASE("with another node cache alive, shared rules and the addresses stay for it",
          "[nanny][node-local]") {
  Fixture f;
  f.Start();
  std::string error;
  REQUIRE(WriteFileAtomically(f.dir.File("unix"), kOtherNodeCache, &error));
  f.runner.commands.clear();
  CHECK(f.node_local->StopRouting());
  f.node_local->Teardown();
  CHECK(f.runner.commands.empty());
  CHECK(f.node.table);
  CHECK(f.node.lo.addresses.size() == 1);
}

TEST_CASE("with another node cache alive, our own table still goes, the addresses stay",
          "[nanny][node-local]") {
  Fixture f;
  f.owned_table = true;
  f.Start();
  std::string error;
  REQUIRE(WriteFileAtomically(f.dir.File("unix"), kOtherNodeCache, &error));
  f.runner.commands.clear();
  CHECK(f.node_local->StopRouting());
  CHECK(f.session_runs.back().starts_with("delete chain inet kdns-nodelocal-"));
  f.node_local->Teardown();
  CHECK(f.session_runs.back().starts_with("delete table inet kdns-nodelocal-"));
  CHECK(f.runner.RunWith("ip ").empty());
  CHECK(f.node.lo.addresses.size() == 1);
}

}  // namespace kdns::nanny

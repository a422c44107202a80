#include "nanny/firewall.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "nanny/fake_command_runner.h"
#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

using testing::FakeCommandRunner;
using testing::Joined;

RuleSpec Spec(const std::vector<std::string>& addresses) {
  RuleSpec spec;
  for (const std::string& text : addresses) spec.addresses.push_back(*IpAddress::Parse(text));
  return spec;
}

std::vector<std::string> Lines(const std::vector<IptablesRule>& rules, bool v6,
                               const std::string& table) {
  std::vector<std::string> out;
  for (const IptablesRule& rule : rules) {
    if (rule.v6 == v6 && rule.table == table) out.push_back(rule.ListedLine());
  }
  return out;
}

// A fake iptables/ip6tables: holds `iptables -S` lines per (v6, table) and applies -I/-D.
struct FakeIptables {
  CommandResult operator()(const std::vector<std::string>& argv) {
    const bool v6 = argv[0] == "ip6tables";
    // argv: iptables -w 2 -t TABLE VERB [CHAIN SPEC...]
    const std::string& table = argv[4];
    std::vector<std::string>& lines = tables[{v6, table}];
    const std::string& verb = argv[5];
    if (verb == "-S") {
      std::string out = "-P " + std::string(table == "raw" ? "PREROUTING" : "INPUT") + " ACCEPT\n";
      for (const std::string& line : lines) out += line + "\n";
      return {0, out, ""};
    }
    IptablesRule rule{v6, table, argv[6], {argv.begin() + 7, argv.end()}};
    if (verb == "-I") {
      lines.insert(lines.begin(), rule.ListedLine());
      return {0, "", ""};
    }
    auto found = std::find(lines.begin(), lines.end(), rule.ListedLine());
    if (found == lines.end()) return {1, "", "iptables: Bad rule (does a matching rule exist?)"};
    lines.erase(found);
    return {0, "", ""};
  }
  std::map<std::pair<bool, std::string>, std::vector<std::string>> tables;
};

}  // namespace

TEST_CASE("iptables rules are node-cache's, per address, for DNS and the health port",
          "[nanny][firewall]") {
  RuleSpec spec = Spec({"169.254.20.10"});
  spec.health_port = 8080;
  const std::vector<IptablesRule> rules = IptablesRules(spec);
  CHECK(rules.size() == 15);
  const std::vector<std::string> raw = Lines(rules, false, "raw");
  CHECK(std::count(raw.begin(), raw.end(),
                   "-A PREROUTING -d 169.254.20.10/32 -p udp -m udp --dport 53 -m comment "
                   "--comment \"NodeLocal DNS Cache: skip conntrack\" -j NOTRACK") == 1);
  CHECK(std::count(raw.begin(), raw.end(),
                   "-A OUTPUT -s 169.254.20.10/32 -p tcp -m tcp --sport 53 -m comment "
                   "--comment \"NodeLocal DNS Cache: skip conntrack\" -j NOTRACK") == 1);
  CHECK(std::count(raw.begin(), raw.end(),
                   "-A OUTPUT -d 169.254.20.10/32 -p tcp -m tcp --dport 8080 -m comment "
                   "--comment \"NodeLocal DNS Cache: skip conntrack\" -j NOTRACK") == 1);
  const std::vector<std::string> filter = Lines(rules, false, "filter");
  CHECK(std::count(filter.begin(), filter.end(),
                   "-A INPUT -d 169.254.20.10/32 -p udp -m udp --dport 53 -m comment "
                   "--comment \"NodeLocal DNS Cache: allow DNS traffic\" -j ACCEPT") == 1);
  CHECK(std::count(filter.begin(), filter.end(),
                   "-A OUTPUT -s 169.254.20.10/32 -p udp -m udp --sport 53 -m comment "
                   "--comment \"NodeLocal DNS Cache: allow DNS traffic\" -j ACCEPT") == 1);
  CHECK(raw.size() == 9);
  CHECK(filter.size() == 6);
}

TEST_CASE("IPv6 addresses get ip6tables rules with /128", "[nanny][firewall]") {
  const std::vector<IptablesRule> rules = IptablesRules(Spec({"10.96.0.10", "fd00::a"}));
  CHECK(rules.size() == 30);
  const std::vector<std::string> raw6 = Lines(rules, true, "raw");
  REQUIRE(raw6.size() == 9);
  CHECK(raw6[0] ==
        "-A PREROUTING -d fd00::a/128 -p udp -m udp --dport 53 -m comment --comment "
        "\"NodeLocal DNS Cache: skip conntrack\" -j NOTRACK");
  CHECK(Lines(rules, false, "raw").size() == 9);
}

TEST_CASE("the nftables ruleset replaces our one table atomically", "[nanny][firewall]") {
  RuleSpec spec = Spec({"169.254.20.10", "fd00::a"});
  spec.dns_port = 53;
  spec.health_port = 8081;
  const std::string text = NftablesRuleset(spec);
  // Create, delete, create: one transaction whether the table exists or not.
  const size_t create = text.find("table inet kdns-nodelocal\n");
  const size_t remove = text.find("delete table inet kdns-nodelocal\n");
  const size_t body = text.find("table inet kdns-nodelocal {\n");
  REQUIRE(create != std::string::npos);
  REQUIRE(remove != std::string::npos);
  REQUIRE(body != std::string::npos);
  CHECK(create < remove);
  CHECK(remove < body);
  CHECK(text.find("type filter hook prerouting priority raw; policy accept;") != std::string::npos);
  CHECK(text.find("type filter hook input priority filter; policy accept;") != std::string::npos);
  CHECK(text.find("ip daddr 169.254.20.10 udp dport 53 notrack") != std::string::npos);
  CHECK(text.find("ip saddr 169.254.20.10 tcp sport 53 notrack") != std::string::npos);
  CHECK(text.find("ip daddr 169.254.20.10 tcp dport 8081 notrack") != std::string::npos);
  CHECK(text.find("ip6 daddr fd00::a tcp dport 53 accept") != std::string::npos);
  CHECK(text.find("ip6 saddr fd00::a udp sport 53 accept") != std::string::npos);
  // The capturing rules in chains of their own (Firewall::RemoveCapture deletes them).
  const size_t queries = text.find("chain raw-output-queries {");
  const size_t replies = text.find("chain raw-output {");
  REQUIRE(queries != std::string::npos);
  REQUIRE(replies != std::string::npos);
  CHECK(text.find("ip daddr 169.254.20.10 udp dport 53 notrack", queries) < replies);
  CHECK(text.find("ip saddr 169.254.20.10 udp sport 53 notrack", replies) != std::string::npos);
  // Every rule once: 15 per address.
  CHECK(std::count(text.begin(), text.end(), '\n') == 2 + 3 + 5 * 3 + 30 + 1);
}

TEST_CASE("an owned nftables table is created with its flag, so the replacement keeps it",
          "[nanny][firewall]") {
  const std::string text =
      NftablesRuleset(Spec({"169.254.20.10"}), NftTable{"kdns-nodelocal-0badcafe", true});
  // The owner flag cannot be taken off a table: the first statement must not try to.
  CHECK(text.find("table inet kdns-nodelocal-0badcafe { flags owner; }\n"
                  "delete table inet kdns-nodelocal-0badcafe\n"
                  "table inet kdns-nodelocal-0badcafe {\n\tflags owner\n") != std::string::npos);
  CHECK(NftablesRuleset(Spec({"169.254.20.10"})).find("owner") == std::string::npos);
}

TEST_CASE("auto picks nftables where kube-proxy or iptables already use nf_tables",
          "[nanny][firewall]") {
  std::string error;
  BackendFacts legacy{true, true, "table ip filter\n", "iptables v1.8.7 (legacy)\n"};
  CHECK(ChooseBackend(FirewallChoice::kAuto, legacy, &error) == FirewallBackend::kIptables);
  BackendFacts kube_proxy = legacy;
  kube_proxy.nft_tables = "table ip kube-proxy\ntable ip6 kube-proxy\n";
  CHECK(ChooseBackend(FirewallChoice::kAuto, kube_proxy, &error) == FirewallBackend::kNftables);
  BackendFacts inet = legacy;
  inet.nft_tables = "table inet kube-proxy\n";
  CHECK(ChooseBackend(FirewallChoice::kAuto, inet, &error) == FirewallBackend::kNftables);
  BackendFacts nft_iptables = legacy;
  nft_iptables.iptables_version = "iptables v1.8.9 (nf_tables)\n";
  CHECK(ChooseBackend(FirewallChoice::kAuto, nft_iptables, &error) == FirewallBackend::kNftables);
  BackendFacts no_nft = nft_iptables;
  no_nft.nft_found = false;
  CHECK(ChooseBackend(FirewallChoice::kAuto, no_nft, &error) == FirewallBackend::kIptables);
  BackendFacts only_nft{true, false, "", ""};
  CHECK(ChooseBackend(FirewallChoice::kAuto, only_nft, &error) == FirewallBackend::kNftables);
  CHECK(ChooseBackend(FirewallChoice::kIptables, kube_proxy, &error) == FirewallBackend::kIptables);
  CHECK(ChooseBackend(FirewallChoice::kNftables, legacy, &error) == FirewallBackend::kNftables);
}

TEST_CASE("a backend whose tool is missing is a start-up error", "[nanny][firewall]") {
  std::string error;
  CHECK_FALSE(ChooseBackend(FirewallChoice::kNftables, {false, true, "", ""}, &error));
  CHECK(error == "--firewall=nftables: nft is not in PATH");
  CHECK_FALSE(ChooseBackend(FirewallChoice::kIptables, {true, false, "", ""}, &error));
  CHECK(error == "--firewall=iptables: iptables is not in PATH");
  CHECK_FALSE(ChooseBackend(FirewallChoice::kAuto, {false, false, "", ""}, &error));
  CHECK(error == "--firewall=auto: neither nft nor iptables is in PATH");
}

TEST_CASE("the backend facts come from nft list tables and iptables -V", "[nanny][firewall]") {
  FakeCommandRunner runner;
  runner.script["nft list tables"] = {0, "table inet kube-proxy\n", ""};
  runner.script["iptables -V"] = {0, "iptables v1.8.9 (legacy)\n", ""};
  const BackendFacts facts = GatherBackendFacts(runner);
  CHECK(facts.nft_found);
  CHECK(facts.iptables_found);
  CHECK(facts.nft_tables == "table inet kube-proxy\n");
  CHECK(facts.iptables_version == "iptables v1.8.9 (legacy)\n");
  runner.installed = {};
  runner.commands.clear();
  const BackendFacts none = GatherBackendFacts(runner);
  CHECK_FALSE(none.nft_found);
  CHECK(runner.commands.empty());
}

TEST_CASE("the firewall choice reads auto, nftables and iptables", "[nanny][firewall]") {
  CHECK(ParseFirewallChoice("auto") == FirewallChoice::kAuto);
  CHECK(ParseFirewallChoice("nftables") == FirewallChoice::kNftables);
  CHECK(ParseFirewallChoice("iptables") == FirewallChoice::kIptables);
  CHECK_FALSE(ParseFirewallChoice("ipvs"));
  CHECK(FirewallBackendName(FirewallBackend::kNone) == "none");
}

TEST_CASE("iptables: a deleted or altered rule is inserted again; the rest stay",
          "[nanny][firewall]") {
  FakeCommandRunner runner;
  FakeIptables iptables;
  runner.handler = std::ref(iptables);
  auto firewall =
      MakeFirewall(FirewallBackend::kIptables, Spec({"169.254.20.10", "fd00::a"}), runner, "");
  std::string error;
  REQUIRE(firewall->Install(&error));
  CHECK(runner.RunWith("iptables -w 2 -t raw -I").size() == 9);
  CHECK(runner.RunWith("ip6tables -w 2 -t filter -I").size() == 6);
  // Listed once per table and family, not once per rule.
  runner.commands.clear();
  CHECK(firewall->Sync(&error) == SyncOutcome::kInPlace);
  CHECK(runner.commands.size() == 4);

  // Another agent deletes one rule and alters another (its port).
  std::vector<std::string>& raw = iptables.tables[{false, "raw"}];
  raw.erase(raw.begin());
  std::vector<std::string>& filter6 = iptables.tables[{true, "filter"}];
  auto altered = std::find_if(filter6.begin(), filter6.end(), [](const std::string& line) {
    return line.find("--dport 53 ") != std::string::npos;
  });
  REQUIRE(altered != filter6.end());
  altered->replace(altered->find("--dport 53 "), 10, "--dport 54");
  runner.commands.clear();
  CHECK(firewall->Sync(&error) == SyncOutcome::kRepaired);
  CHECK(runner.RunWith("iptables -w 2 -t raw -I").size() == 1);
  CHECK(runner.RunWith("ip6tables -w 2 -t filter -I").size() == 1);
  CHECK(firewall->Sync(&error) == SyncOutcome::kInPlace);
}

TEST_CASE("iptables: removal deletes every copy of our rules and nothing else",
          "[nanny][firewall]") {
  FakeCommandRunner runner;
  FakeIptables iptables;
  runner.handler = std::ref(iptables);
  const RuleSpec spec = Spec({"169.254.20.10"});
  auto firewall = MakeFirewall(FirewallBackend::kIptables, spec, runner, "");
  std::string error;
  REQUIRE(firewall->Install(&error));
  std::vector<std::string>& raw = iptables.tables[{false, "raw"}];
  raw.push_back(raw.front());  // a copy (an older node cache's)
  raw.push_back("-A PREROUTING -j KUBE-SOMETHING");
  REQUIRE(firewall->Remove(&error));
  CHECK(raw == std::vector<std::string>{"-A PREROUTING -j KUBE-SOMETHING"});
  CHECK(iptables.tables[{false, "filter"}].empty());
}

TEST_CASE("iptables: the rules that capture queries go in last and come out first",
          "[nanny][firewall]") {
  // One command per rule: our replies must never be tracked while their queries are not.
  FakeCommandRunner runner;
  FakeIptables iptables;
  runner.handler = std::ref(iptables);
  auto firewall = MakeFirewall(FirewallBackend::kIptables, Spec({"169.254.20.10"}), runner, "");
  auto with = [&runner](const char* verb) {
    std::vector<std::string> out;
    for (const std::string& line : runner.commands) {
      if (line.find(verb) != std::string::npos) out.push_back(line);
    }
    return out;
  };
  auto captures = [](const std::string& line) {
    return line.find(" -t raw ") != std::string::npos && line.find(" -d ") != std::string::npos;
  };
  std::string error;
  REQUIRE(firewall->Install(&error));
  const std::vector<std::string> inserted = with(" -I ");
  REQUIRE(inserted.size() == 15);  // 9 raw (6 of them capture), 6 filter
  CHECK(std::none_of(inserted.begin(), inserted.begin() + 9, captures));
  CHECK(std::all_of(inserted.begin() + 9, inserted.end(), captures));
  REQUIRE(firewall->Remove(&error));
  const std::vector<std::string> deleted = with(" -D ");
  REQUIRE(deleted.size() == 15);
  CHECK(std::all_of(deleted.begin(), deleted.begin() + 6, captures));
  CHECK(std::none_of(deleted.begin() + 6, deleted.end(), captures));
}

TEST_CASE("iptables: removing the capture leaves the rules of our replies until the end",
          "[nanny][firewall]") {
  FakeCommandRunner runner;
  FakeIptables iptables;
  runner.handler = std::ref(iptables);
  auto firewall = MakeFirewall(FirewallBackend::kIptables, Spec({"169.254.20.10"}), runner, "");
  std::string error;
  REQUIRE(firewall->Install(&error));
  REQUIRE(firewall->RemoveCapture(&error));
  const std::vector<std::string>& raw = iptables.tables[{false, "raw"}];
  CHECK(raw.size() == 3);  // OUTPUT -s ... NOTRACK, per service
  CHECK(std::all_of(raw.begin(), raw.end(), [](const std::string& line) {
    return line.starts_with("-A OUTPUT -s 169.254.20.10/32 ");
  }));
  CHECK(iptables.tables[{false, "filter"}].size() == 6);
  REQUIRE(firewall->Remove(&error));
  CHECK(raw.empty());
  CHECK(iptables.tables[{false, "filter"}].empty());
}

TEST_CASE("iptables: a failed listing fails the sync with the command's error",
          "[nanny][firewall]") {
  FakeCommandRunner runner;
  runner.script["iptables -w 2 -t raw -S"] = {4, "",
                                              "iptables: Resource temporarily unavailable.\n"};
  auto firewall = MakeFirewall(FirewallBackend::kIptables, Spec({"169.254.20.10"}), runner, "");
  std::string error;
  CHECK(firewall->Sync(&error) == SyncOutcome::kFailed);
  CHECK(error == "iptables -w 2 -t raw -S: exit 4: iptables: Resource temporarily unavailable.");
}

TEST_CASE("nftables: the table is checked against nft's own listing and rewritten whole",
          "[nanny][firewall]") {
  kdns::testing::TempDir dir;
  FakeCommandRunner runner;
  std::string listing = "table inet kdns-nodelocal { ... }\n";
  bool present = false;
  runner.handler = [&](const std::vector<std::string>& argv) -> CommandResult {
    const std::string line = Joined(argv);
    if (line.starts_with("nft -f ")) {
      present = true;
      listing = "table inet kdns-nodelocal { ... }\n";
      return {0, "", ""};
    }
    if (line == "nft list table inet kdns-nodelocal") {
      if (!present) return {1, "", "Error: No such file or directory"};
      return {0, listing, ""};
    }
    if (line == "nft delete table inet kdns-nodelocal") {
      present = false;
      return {0, "", ""};
    }
    return {0, "", ""};
  };
  const std::string file = dir.File("nodelocal.nft");
  auto firewall = MakeFirewall(FirewallBackend::kNftables, Spec({"169.254.20.10"}), runner, file);
  std::string error;
  REQUIRE(firewall->Install(&error));
  CHECK(runner.RunWith("nft -f " + file).size() == 1);
  CHECK(firewall->Sync(&error) == SyncOutcome::kInPlace);
  // Altered: the listing differs from the one taken after writing.
  listing = "table inet kdns-nodelocal { altered }\n";
  CHECK(firewall->Sync(&error) == SyncOutcome::kRepaired);
  CHECK(runner.RunWith("nft -f " + file).size() == 2);
  CHECK(firewall->Sync(&error) == SyncOutcome::kInPlace);
  // Deleted.
  present = false;
  CHECK(firewall->Sync(&error) == SyncOutcome::kRepaired);
  CHECK(present);
  REQUIRE(firewall->Remove(&error));
  CHECK_FALSE(present);
  // Removing what is gone already is no error.
  CHECK(firewall->Remove(&error));
}

TEST_CASE("nftables: a failed write is an install error naming the command", "[nanny][firewall]") {
  kdns::testing::TempDir dir;
  FakeCommandRunner runner;
  const std::string file = dir.File("nodelocal.nft");
  runner.script["nft -f " + file] = {1, "",
                                     "Error: Could not process rule: Operation not permitted\n"};
  auto firewall = MakeFirewall(FirewallBackend::kNftables, Spec({"169.254.20.10"}), runner, file);
  std::string error;
  CHECK_FALSE(firewall->Install(&error));
  CHECK(error ==
        "nft -f " + file + ": exit 1: Error: Could not process rule: Operation not permitted");
  CHECK(firewall->Sync(&error) == SyncOutcome::kFailed);
}

}  // namespace kdns::nanny

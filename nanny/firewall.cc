#include "nanny/firewall.h"

#include <glog/logging.h>

#include <algorithm>
#include <sstream>

#include "nanny/atomic_file.h"

namespace kdns::nanny {
namespace {

// -w: wait this long for the xtables lock (iptables-legacy; the nft backend ignores it)
// rather than fail while kube-proxy holds it.
constexpr const char* kXtablesWaitS = "2";

enum class Proto { kUdp, kTcp };
const char* ProtoName(Proto proto) { return proto == Proto::kUdp ? "udp" : "tcp"; }

// The (protocol, port) pairs every address gets: DNS over UDP and TCP, the health port.
std::vector<std::pair<Proto, uint16_t>> Services(const RuleSpec& spec) {
  return {
      {Proto::kUdp, spec.dns_port}, {Proto::kTcp, spec.dns_port}, {Proto::kTcp, spec.health_port}};
}

// One rule of the table in the header, before it is written in a backend's words.
struct Rule {
  enum class Hook { kRawPrerouting, kRawOutput, kFilterInput, kFilterOutput } hook;
  bool to_address;  // daddr/dport, else saddr/sport
  IpAddress address;
  Proto proto;
  uint16_t port;
  bool notrack;  // else accept
};

// NOTRACK of the queries to our addresses: the rules that take them from kube-proxy's DNAT
// and send them our way (the others let our replies out untracked, and accept).
bool Captures(const Rule& rule) { return rule.notrack && rule.to_address; }

std::vector<Rule> Rules(const RuleSpec& spec) {
  using Hook = Rule::Hook;
  std::vector<Rule> rules;
  for (const IpAddress& address : spec.addresses) {
    for (const auto& [proto, port] : Services(spec)) {
      rules.push_back({Hook::kRawPrerouting, true, address, proto, port, true});
      rules.push_back({Hook::kRawOutput, false, address, proto, port, true});
      rules.push_back({Hook::kRawOutput, true, address, proto, port, true});
      rules.push_back({Hook::kFilterInput, true, address, proto, port, false});
      rules.push_back({Hook::kFilterOutput, false, address, proto, port, false});
    }
  }
  return rules;
}

std::string NftRule(const Rule& rule) {
  std::string text = rule.address.is_v6() ? "ip6 " : "ip ";
  text += rule.to_address ? "daddr " : "saddr ";
  text += rule.address.ToString() + " " + ProtoName(rule.proto);
  text += rule.to_address ? " dport " : " sport ";
  text += std::to_string(rule.port) + (rule.notrack ? " notrack" : " accept");
  return text;
}

std::string Quoted(const std::string& arg) {
  return arg.find(' ') == std::string::npos ? arg : "\"" + arg + "\"";
}

std::string TableName(const NftTable& table) { return std::string(kNftFamily) + " " + table.name; }

class NftablesFirewall final : public Firewall {
 public:
  // `session` null: the shared table, written with `nft -f ruleset_file`; else `table` owned
  // by the session's socket.
  NftablesFirewall(RuleSpec spec, CommandRunner& runner, std::string ruleset_file,
                   NftSession* session, NftTable table)
      : spec_(std::move(spec)),
        runner_(runner),
        ruleset_file_(std::move(ruleset_file)),
        session_(session),
        table_(std::move(table)) {}

  FirewallBackend backend() const override { return FirewallBackend::kNftables; }
  bool shared() const override { return !table_.owner; }

  bool Install(std::string* error) override {
    if (!Write(error)) return false;
    // What nft lists now is what "in place" looks like from here on.
    const CommandResult listed = runner_.Run(ListArgv());
    installed_listing_ = listed.ok() ? listed.output : std::string();
    return true;
  }

  SyncOutcome Sync(std::string* error) override {
    const CommandResult listed = runner_.Run(ListArgv());
    if (listed.ok() && !installed_listing_.empty() && listed.output == installed_listing_) {
      return SyncOutcome::kInPlace;
    }
    // The table is gone (nft fails to list it) or differs: write it again, atomically.
    if (!Install(error)) return SyncOutcome::kFailed;
    return SyncOutcome::kRepaired;
  }

  bool RemoveCapture(std::string* error) override {
    // Both chains in one transaction.
    std::string commands;
    for (std::string_view chain : kNftCaptureChains) {
      commands += "delete chain " + TableName(table_) + " " + std::string(chain) + "; ";
    }
    bool removed = false;
    if (session_ != nullptr) {
      removed = session_->Run(commands, error);
    } else {
      const std::vector<std::string> argv = {"nft", commands};
      const CommandResult result = runner_.Run(argv);
      removed = result.ok();
      if (!removed) *error = result.Describe(argv);
    }
    if (!removed && runner_.Run(ListArgv()).ok()) return false;
    return true;  // gone (or the table never there)
  }

  bool Remove(std::string* error) override {
    const std::string name = TableName(table_);
    bool removed = false;
    if (session_ != nullptr) {
      // Only the owner's socket may delete an owned table.
      removed = session_->Run("delete table " + name + "\n", error);
    } else {
      const std::vector<std::string> argv = {"nft", "delete", "table", std::string(kNftFamily),
                                             table_.name};
      const CommandResult result = runner_.Run(argv);
      removed = result.ok();
      if (!removed) *error = result.Describe(argv);
    }
    if (!removed && runner_.Run(ListArgv()).ok()) return false;
    return true;  // gone (or never there)
  }

 private:
  bool Write(std::string* error) {
    const std::string ruleset = NftablesRuleset(spec_, table_);
    if (session_ != nullptr) return session_->Run(ruleset, error);
    if (!WriteFileAtomically(ruleset_file_, ruleset, error)) return false;
    const std::vector<std::string> argv = {"nft", "-f", ruleset_file_};
    const CommandResult written = runner_.Run(argv);
    if (!written.ok()) *error = written.Describe(argv);
    return written.ok();
  }

  std::vector<std::string> ListArgv() const {
    return {"nft", "list", "table", std::string(kNftFamily), table_.name};
  }

  RuleSpec spec_;
  CommandRunner& runner_;
  std::string ruleset_file_;
  NftSession* session_;
  NftTable table_;
  std::string installed_listing_;
};

class IptablesFirewall final : public Firewall {
 public:
  IptablesFirewall(const RuleSpec& spec, CommandRunner& runner)
      : rules_(IptablesRules(spec)), runner_(runner) {
    // One rule at a time, unlike nftables' one transaction, so the order matters: the way
    // back (our replies' NOTRACK, the ACCEPTs) is put in before the rules that capture the
    // queries, and taken out after them. Otherwise a reply of ours could be tracked while
    // its query was not, and the conntrack entry it leaves (ClusterIP:53 -> client) would
    // keep that client's next queries from kube-proxy's DNAT once we are gone.
    std::stable_partition(rules_.begin(), rules_.end(),
                          [](const IptablesRule& rule) { return !rule.captures; });
  }

  FirewallBackend backend() const override { return FirewallBackend::kIptables; }
  bool shared() const override { return true; }

  bool Install(std::string* error) override { return Sync(error) != SyncOutcome::kFailed; }

  SyncOutcome Sync(std::string* error) override {
    std::vector<int> counts;
    if (!Count(&counts, error)) return SyncOutcome::kFailed;
    bool repaired = false;
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (counts[i] > 0) continue;
      if (!Change("-I", rules_[i], error)) return SyncOutcome::kFailed;
      repaired = true;
    }
    return repaired ? SyncOutcome::kRepaired : SyncOutcome::kInPlace;
  }

  bool RemoveCapture(std::string* error) override { return Delete(Which::kCapturing, error); }
  bool Remove(std::string* error) override { return Delete(Which::kAll, error); }

 private:
  enum class Which { kCapturing, kAll };

  bool Delete(Which which, std::string* error) {
    std::vector<int> counts;
    if (!Count(&counts, error)) return false;
    bool ok = true;
    for (size_t i = rules_.size(); i-- > 0;) {  // the capturing rules first
      if (which == Which::kCapturing && !rules_[i].captures) continue;
      for (int copy = 0; copy < counts[i]; ++copy) {
        std::string failed;
        if (!Change("-D", rules_[i], &failed)) {
          if (ok) *error = failed;  // the first one; the others are still tried
          ok = false;
          break;
        }
      }
    }
    return ok;
  }

  static std::string Program(bool v6) { return v6 ? "ip6tables" : "iptables"; }

  bool Count(std::vector<int>* counts, std::string* error) {
    IptablesListings listings;
    for (const IptablesRule& rule : rules_) {
      const auto key = std::make_pair(rule.v6, rule.table);
      if (listings.contains(key)) continue;
      const std::vector<std::string> argv = {Program(rule.v6), "-w", kXtablesWaitS, "-t",
                                             rule.table,       "-S"};
      const CommandResult listed = runner_.Run(argv);
      if (!listed.ok()) {
        *error = listed.Describe(argv);
        return false;
      }
      listings[key] = listed.output;
    }
    *counts = CountIptablesRules(rules_, listings);
    return true;
  }

  // `verb` -I (insert at the top, as node-cache) or -D.
  bool Change(const char* verb, const IptablesRule& rule, std::string* error) {
    std::vector<std::string> argv = {Program(rule.v6), "-w", kXtablesWaitS, "-t",
                                     rule.table,       verb, rule.chain};
    for (const std::string& arg : rule.spec) {
      // The comment is one argument; ListedLine() quotes it as iptables -S does.
      argv.push_back(arg);
    }
    const CommandResult changed = runner_.Run(argv);
    if (!changed.ok()) {
      *error = changed.Describe(argv);
      return false;
    }
    return true;
  }

  std::vector<IptablesRule> rules_;
  CommandRunner& runner_;
};

}  // namespace

std::string_view FirewallBackendName(FirewallBackend backend) {
  switch (backend) {
    case FirewallBackend::kNftables:
      return "nftables";
    case FirewallBackend::kIptables:
      return "iptables";
    case FirewallBackend::kNone:
      break;
  }
  return "none";
}

std::optional<FirewallChoice> ParseFirewallChoice(std::string_view text) {
  if (text == "auto") return FirewallChoice::kAuto;
  if (text == "nftables") return FirewallChoice::kNftables;
  if (text == "iptables") return FirewallChoice::kIptables;
  return std::nullopt;
}

std::string NftablesRuleset(const RuleSpec& spec, const NftTable& table) {
  using Hook = Rule::Hook;
  const std::vector<Rule> rules = Rules(spec);
  struct Chain {
    Hook hook;
    bool captures;  // holds the capturing rules (RemoveCapture deletes these chains)
    std::string_view name;
    const char* declaration;
  };
  const Chain chains[] = {
      {Hook::kRawPrerouting, true, kNftCaptureChains[0],
       "type filter hook prerouting priority raw;"},
      {Hook::kRawOutput, true, kNftCaptureChains[1], "type filter hook output priority raw;"},
      {Hook::kRawOutput, false, "raw-output", "type filter hook output priority raw;"},
      {Hook::kFilterInput, false, "filter-input", "type filter hook input priority filter;"},
      {Hook::kFilterOutput, false, "filter-output", "type filter hook output priority filter;"},
  };
  // Create, delete, create: one transaction that replaces the table whether it exists or not
  // (an owned table is created with its flag: a table's owner flag cannot be taken away).
  const std::string name = TableName(table);
  const std::string flags = table.owner ? " { flags owner; }" : "";
  std::string text =
      "# Written by the nanny (node-local mode): NOTRACK and ACCEPT for the\n"
      "# node-local DNS addresses. Replaced as a whole; do not edit.\n";
  text += "table " + name + flags + "\n";
  text += "delete table " + name + "\n";
  text += "table " + name + " {\n";
  if (table.owner) text += "\tflags owner\n";
  for (const Chain& chain : chains) {
    text += "\tchain " + std::string(chain.name) + " {\n";
    text += "\t\t" + std::string(chain.declaration) + " policy accept;\n";
    for (const Rule& rule : rules) {
      if (rule.hook == chain.hook && Captures(rule) == chain.captures) {
        text += "\t\t" + NftRule(rule) + "\n";
      }
    }
    text += "\t}\n";
  }
  text += "}\n";
  return text;
}

std::string IptablesRule::ListedLine() const {
  std::string line = "-A " + chain;
  for (const std::string& arg : spec) line += " " + Quoted(arg);
  return line;
}

std::vector<IptablesRule> IptablesRules(const RuleSpec& spec) {
  using Hook = Rule::Hook;
  std::vector<IptablesRule> out;
  for (const Rule& rule : Rules(spec)) {
    IptablesRule r;
    r.v6 = rule.address.is_v6();
    r.captures = Captures(rule);
    r.table = rule.hook == Hook::kRawPrerouting || rule.hook == Hook::kRawOutput ? "raw" : "filter";
    r.chain = rule.hook == Hook::kRawPrerouting ? "PREROUTING"
              : rule.hook == Hook::kFilterInput ? "INPUT"
                                                : "OUTPUT";
    const std::string proto = ProtoName(rule.proto);
    r.spec = {rule.to_address ? "-d" : "-s",
              rule.address.ToString() + (r.v6 ? "/128" : "/32"),
              "-p",
              proto,
              "-m",
              proto,
              rule.to_address ? "--dport" : "--sport",
              std::to_string(rule.port),
              "-m",
              "comment",
              "--comment",
              std::string(rule.notrack ? kSkipConntrackComment : kAllowTrafficComment),
              "-j",
              rule.notrack ? "NOTRACK" : "ACCEPT"};
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<int> CountIptablesRules(const std::vector<IptablesRule>& rules,
                                    const IptablesListings& listings) {
  std::vector<int> counts;
  counts.reserve(rules.size());
  for (const IptablesRule& rule : rules) {
    int count = 0;
    auto listing = listings.find({rule.v6, rule.table});
    if (listing != listings.end()) {
      const std::string wanted = rule.ListedLine();
      std::istringstream lines(listing->second);
      std::string line;
      while (std::getline(lines, line)) {
        if (line == wanted) ++count;
      }
    }
    counts.push_back(count);
  }
  return counts;
}

std::optional<FirewallBackend> ChooseBackend(FirewallChoice choice, const BackendFacts& facts,
                                             std::string* error) {
  const bool kube_proxy_nft = facts.nft_tables.find("table ip kube-proxy") != std::string::npos ||
                              facts.nft_tables.find("table ip6 kube-proxy") != std::string::npos ||
                              facts.nft_tables.find("table inet kube-proxy") != std::string::npos;
  const bool iptables_on_nft = facts.iptables_version.find("nf_tables") != std::string::npos;
  FirewallBackend backend = FirewallBackend::kIptables;
  // auto: nftables where kube-proxy or iptables itself works through nf_tables, or where
  // iptables is missing altogether.
  if (choice == FirewallChoice::kNftables ||
      (choice == FirewallChoice::kAuto && facts.nft_found &&
       (kube_proxy_nft || iptables_on_nft || !facts.iptables_found))) {
    backend = FirewallBackend::kNftables;
  }
  if (backend == FirewallBackend::kNftables && !facts.nft_found) {
    *error = "--firewall=nftables: nft is not in PATH";
    return std::nullopt;
  }
  if (backend == FirewallBackend::kIptables && !facts.iptables_found) {
    *error = choice == FirewallChoice::kAuto
                 ? "--firewall=auto: neither nft nor iptables is in PATH"
                 : "--firewall=iptables: iptables is not in PATH";
    return std::nullopt;
  }
  return backend;
}

BackendFacts GatherBackendFacts(CommandRunner& runner) {
  BackendFacts facts;
  facts.nft_found = runner.Exists("nft");
  facts.iptables_found = runner.Exists("iptables");
  if (facts.nft_found) facts.nft_tables = runner.Run({"nft", "list", "tables"}).output;
  if (facts.iptables_found) facts.iptables_version = runner.Run({"iptables", "-V"}).output;
  return facts;
}

std::unique_ptr<Firewall> MakeFirewall(FirewallBackend backend, RuleSpec spec,
                                       CommandRunner& runner, std::string ruleset_file,
                                       std::optional<OwnedNftTable> owned) {
  switch (backend) {
    case FirewallBackend::kNftables:
      if (owned) {
        return std::make_unique<NftablesFirewall>(std::move(spec), runner, std::string(),
                                                  owned->session, NftTable{owned->name, true});
      }
      return std::make_unique<NftablesFirewall>(std::move(spec), runner, std::move(ruleset_file),
                                                nullptr, NftTable{});
    case FirewallBackend::kIptables:
      return std::make_unique<IptablesFirewall>(spec, runner);
    case FirewallBackend::kNone:
      break;
  }
  return nullptr;
}

}  // namespace kdns::nanny

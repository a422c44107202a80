// Firewall: the NOTRACK and ACCEPT rules of node-local mode, installed, checked, repaired and
// removed as one unit, with nftables or iptables. The one module that touches the firewall
// (issue 34 builds its ownership and hand-over on this interface).
//
// Per node-local address (-localip), for UDP and TCP on the DNS port and TCP on the health
// port:
//   raw PREROUTING  daddr A dport P  NOTRACK   queries from pods skip conntrack (and so
//   raw OUTPUT      saddr A sport P  NOTRACK   kube-proxy's DNAT of the ClusterIP: the
//   raw OUTPUT      daddr A dport P  NOTRACK   node answers it itself, without the
//   filter INPUT    daddr A dport P  ACCEPT    conntrack races and table exhaustion
//   filter OUTPUT   saddr A sport P  ACCEPT    node-local DNS exists to avoid)
// node-cache writes the same rules for port 53 (and raw OUTPUT for its health port).
//
// nftables: one table of ours (IPv4 and IPv6 in one), written atomically (create, delete,
// create: one transaction), checked by listing it and comparing with the listing taken right
// after it was written (nft's own normal form, so no parsing of it), removed with `delete
// table`. Normally the table is the instance's own, `table inet kdns-nodelocal-<id>` with
// `flags owner`, written over the nanny's own netlink socket (nft_session.h): the kernel
// deletes it when the nanny dies in any way, so a killed node cache leaves no rule in the
// way of kube-proxy's DNAT, and the two node caches of an update each hold a table of their
// own. Where the kernel has no owner flag (< 5.12) or libnftables is missing, the one shared
// `table inet kdns-nodelocal`, written with `nft -f`, as iptables' rules: it outlives a
// killed nanny until the next one starts. Its ACCEPT rules accept within our
// table only: a drop in another table at the same hook still drops (nftables evaluates
// every base chain).
// iptables: the rules as node-cache writes them, in the built-in chains, at the top (-I),
// with its comments ("NodeLocal DNS Cache: skip conntrack", "NodeLocal DNS Cache: allow DNS
// traffic"), IPv6 ones with ip6tables; checked with `-S` per table (one command per table
// and family, not one per rule), a rule missing or altered is inserted again; removed with
// -D, every copy.
//
// Backend choice (--firewall=auto): nftables when `nft` exists and kube-proxy runs in
// nftables mode (its table `ip kube-proxy`, `ip6 kube-proxy` or `inet kube-proxy` exists) or
// `iptables -V` says nf_tables (iptables is the nft backend: our table sits beside its
// tables); otherwise iptables (legacy).
//
// Thread: the caller's (the nanny's loop); commands go through a CommandRunner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"
#include "nanny/command_runner.h"
#include "nanny/nft_session.h"
#include "nanny/sync_outcome.h"

namespace kdns::nanny {

enum class FirewallBackend { kNone, kNftables, kIptables };
// "none", "nftables", "iptables" (the kdns_nodelocal_firewall_info backend label).
std::string_view FirewallBackendName(FirewallBackend backend);

// --firewall: auto, nftables or iptables.
enum class FirewallChoice { kAuto, kNftables, kIptables };
std::optional<FirewallChoice> ParseFirewallChoice(std::string_view text);

// What the rules are about.
struct RuleSpec {
  std::vector<IpAddress> addresses;  // the -localip addresses
  uint16_t dns_port = 53;
  uint16_t health_port = 8080;
};

// --- nftables ---------------------------------------------------------------------------

inline constexpr std::string_view kNftFamily = "inet";
inline constexpr std::string_view kNftTable = "kdns-nodelocal";
// The chains of our table that hold the capturing rules (Firewall::RemoveCapture).
inline constexpr std::string_view kNftCaptureChains[] = {"raw-prerouting", "raw-output-queries"};

// Which table: the shared one (no owner), or an instance's own, named kNftTable-<id>.
struct NftTable {
  std::string name = std::string(kNftTable);
  bool owner = false;
};

// The `nft -f` text that replaces `table` atomically with the rules of `spec`.
std::string NftablesRuleset(const RuleSpec& spec, const NftTable& table = {});

// An owned table and the session (socket) that owns it.
struct OwnedNftTable {
  NftSession* session = nullptr;
  std::string name;
};

// --- iptables ---------------------------------------------------------------------------

inline constexpr std::string_view kSkipConntrackComment = "NodeLocal DNS Cache: skip conntrack";
inline constexpr std::string_view kAllowTrafficComment = "NodeLocal DNS Cache: allow DNS traffic";

struct IptablesRule {
  bool v6 = false;    // ip6tables
  std::string table;  // raw, filter
  std::string chain;  // PREROUTING, OUTPUT, INPUT
  // The rule in the order `iptables -S` prints it: -d 169.254.20.10/32 -p udp -m udp
  // --dport 53 -m comment --comment "..." -j NOTRACK (one argument per element).
  std::vector<std::string> spec;
  bool captures = false;  // NOTRACK of queries to our addresses (Firewall::RemoveCapture)

  // The line `iptables -t <table> -S` prints for it: "-A PREROUTING -d ...".
  std::string ListedLine() const;
  friend bool operator==(const IptablesRule&, const IptablesRule&) = default;
};

std::vector<IptablesRule> IptablesRules(const RuleSpec& spec);

// The (family, table) listings the rules live in, each `iptables -S` output keyed by
// {v6, table}.
using IptablesListings = std::map<std::pair<bool, std::string>, std::string>;

// How many times each rule appears in `listings` (the repair decision: 0 is missing or
// altered; the removal deletes every copy).
std::vector<int> CountIptablesRules(const std::vector<IptablesRule>& rules,
                                    const IptablesListings& listings);

// --- the backend choice ---------------------------------------------------------------

struct BackendFacts {
  bool nft_found = false;
  bool iptables_found = false;
  std::string nft_tables;        // `nft list tables`
  std::string iptables_version;  // `iptables -V`
};

// The backend of `choice` given what is on the node; nullopt with *error when the tool it
// needs is missing.
std::optional<FirewallBackend> ChooseBackend(FirewallChoice choice, const BackendFacts& facts,
                                             std::string* error);

// Looks at the node with `runner` (nft and iptables found, their answers).
BackendFacts GatherBackendFacts(CommandRunner& runner);

// --- the rules as one unit ------------------------------------------------------------

class Firewall {
 public:
  virtual ~Firewall() = default;
  virtual FirewallBackend backend() const = 0;
  // Whether the rules are the same objects for every node cache of the node (iptables, the
  // shared nftables table): then the teardown leaves them to a node cache still alive.
  virtual bool shared() const = 0;
  // Puts every rule in place. False with a one-line *error.
  [[nodiscard]] virtual bool Install(std::string* error) = 0;
  // Checks every rule and puts back what is missing or altered.
  virtual SyncOutcome Sync(std::string* error) = 0;
  // Removes the rules that send queries our way (raw NOTRACK of queries to our addresses),
  // and only those: until the child has answered what already reached us, its replies
  // must leave untracked, or the conntrack entry of such a reply (ClusterIP:53 -> client)
  // would hold that client's next queries out of kube-proxy's DNAT after we are gone.
  // False with a one-line *error.
  [[nodiscard]] virtual bool RemoveCapture(std::string* error) = 0;
  // Removes every rule of ours. False with a one-line *error.
  [[nodiscard]] virtual bool Remove(std::string* error) = 0;
};

// `ruleset_file`: where the nftables backend writes its `nft -f` input for the shared table;
// `owned`: the nftables backend writes that table through its session instead.
std::unique_ptr<Firewall> MakeFirewall(FirewallBackend backend, RuleSpec spec,
                                       CommandRunner& runner, std::string ruleset_file,
                                       std::optional<OwnedNftTable> owned = std::nullopt);

}  // namespace kdns::nanny

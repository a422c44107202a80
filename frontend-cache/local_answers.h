// LocalAnswers: what frontend-cache answers from its own configuration instead of
// forwarding, with dnsmasq's semantics (checked against Debian's dnsmasq in
// test/e2e/dnsmasq_diff_test.py), in dnsmasq's order:
//
//   hosts files      /etc/hosts (unless --no-hosts) and --addn-hosts: A, AAAA and ANY for
//                    a name written there, PTR for an address written there (its line's
//                    first name); AA set, TTL --local-ttl. Other types, and a family the
//                    name has no address of, are forwarded.
//   --address        A or AAAA for the rule's domains and every name below them, when the
//                    rule is at least as specific as the --server route the name takes;
//                    AA set, TTL --local-ttl. Other types are forwarded.
//   --filter-AAAA    every other AAAA query: NOERROR with no records (NODATA), never
//                    forwarded.
//   --domain-needed  A and AAAA for a name of one label: NXDOMAIN (NODATA when a hosts file
//                    has the name), never forwarded.
//   --bogus-priv     PTR and ANY under the reverse zones of private and special addresses
//                    (RFC 6303) that would go to the default upstreams: NXDOMAIN, AA set. A
//                    --server for the zone (kube-dns's in-addr.arpa route) takes precedence.
//
// A name a hosts file lists, or under an --address domain, exists: an upstream's NXDOMAIN
// for another type of it is answered NOERROR instead (NODATA; dnsmasq does the same), see
// ClearNxDomainOfKnownName.
//
// --address=/domain/ (no address) is --server=/domain/ and lives in the routing table.
//
// Immutable once built; built by FrontendServer at start and on every reload (the hosts
// files are re-read then, as dnsmasq does on SIGHUP), published with the routing
// (RoutingState), read by every serving and receiver thread without a lock. Lookup
// allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/upstream/route_table.h"
#include "frontend-cache/hosts_file.h"
#include "frontend-cache/options.h"

namespace kdns::frontend {

struct LocalAnswersConfig {
  std::vector<AddressOption> addresses;
  std::vector<HostsEntry> hosts;  // every hosts file's entries, in reading order
  uint32_t ttl_s = 0;             // --local-ttl
  bool filter_aaaa = false;
  bool domain_needed = false;
  bool bogus_priv = false;

  static LocalAnswersConfig From(const Options& options, std::vector<HostsEntry> hosts);
};

struct LocalAnswer {
  enum class Kind : uint8_t {
    kNone,      // not ours: route it as usual
    kRecords,   // `addresses` (A/AAAA/ANY, those of the query's family) or `ptr_targets`
    kNoData,    // NOERROR, no records
    kNxDomain,  // NXDOMAIN
  };
  // Why, for metrics and the query log.
  enum class Reason : uint8_t { kNone, kHosts, kAddress, kFilterAaaa, kDomainNeeded, kBogusPriv };
  Kind kind = Kind::kNone;
  Reason reason = Reason::kNone;
  bool aa = false;
  const std::vector<IpAddress>* addresses = nullptr;
  const std::vector<dns::Name>* ptr_targets = nullptr;
};

class LocalAnswers {
 public:
  // Answers nothing.
  LocalAnswers() = default;
  explicit LocalAnswers(const LocalAnswersConfig& config);

  // What to answer for (qname, qtype); `route_domain` is the domain of the --server route
  // the name takes (the root for the default route), `default_route` whether it is that.
  LocalAnswer Lookup(const dns::Name& qname, dns::RrType qtype, const dns::Name& route_domain,
                     bool default_route) const;

  // Writes the response for `answer` (not kNone) to `query` into `out`, at most
  // `limit_bytes` (TC set when the records do not fit); its size, 0 only if `out` is too
  // small for the question.
  size_t Write(const LocalAnswer& answer, const dns::Query& query, std::span<uint8_t> out,
               size_t limit_bytes) const;

  // A forwarded or cached `response` to a query for `qname`: NXDOMAIN becomes NOERROR when
  // the name exists here (see the header comment).
  void ClearNxDomainOfKnownName(const dns::Name& qname, std::span<uint8_t> response) const;

  bool empty() const { return empty_; }

 private:
  struct AddressRoute {
    dns::Name domain;
    std::vector<IpAddress> addresses;  // both families; empty: no rule

    friend bool operator==(const AddressRoute& a, const AddressRoute& b) {
      return a.domain.IdenticalTo(b.domain) && a.addresses == b.addresses;
    }
  };

  static bool HasFamily(const std::vector<IpAddress>& addresses, dns::RrType qtype);

  uint32_t ttl_s_ = 0;
  bool filter_aaaa_ = false;
  bool domain_needed_ = false;
  bool bogus_priv_ = false;
  bool empty_ = true;
  // Lower-cased name -> its addresses, in file order, each once.
  std::unordered_map<dns::Name, std::vector<IpAddress>, dns::NameHash> hosts_;
  // Address -> the canonical names of the lines that have it, each once.
  std::unordered_map<IpAddress, std::vector<dns::Name>, IpAddressHash> reverse_;
  upstream::RouteTable<AddressRoute> address_routes_;
  upstream::DomainIndex private_reverse_zones_;  // RFC 6303, for --bogus-priv
};

}  // namespace kdns::frontend

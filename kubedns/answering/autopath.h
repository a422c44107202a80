// Autopath: kubedns completes a pod's search-path walk on the server, as CoreDNS's
// `autopath @kubernetes` does, but without a watch of every Pod: the namespace is already in
// the query. With the kubelet's `ndots:5` and search list `<ns>.svc.Z svc.Z Z <node's
// domains>`, a query `N.<ns>.svc.Z` that does not exist is, for a pod of <ns>, the first step
// of its resolver's walk, and the rest of the walk is the same for every namespace:
// `N.svc.Z`, `N.Z`, `N.<d>` for each --autopath-search domain, then `N.`. The first of them
// that exists (NOERROR, with records or NODATA) is answered as `N.<ns>.svc.Z CNAME
// candidate` plus the candidate's own answer, so the client stops after one query per type.
//
// Autopath holds the walk's suffixes and says (Prefix) whether a query qualifies;
// ComposeAutopathAnswer makes the answer. No I/O: DnsHandler (serving/dns_handler.h) resolves each
// candidate, from the record store for the names kubedns owns and through the routes (stub
// domains honoured) for the others, and falls back to the query's own NXDOMAIN when every
// candidate is NXDOMAIN or an upstream fails (never SERVFAIL because of autopath).
//
// The limit CoreDNS's autopath has too: a client whose search list does not start with
// `<ns>.svc.Z`, or that asks for `N.<ns>.svc.Z` as an absolute name on purpose, may get the
// completion (docs/operators.md, "Autopath").
//
// Thread: Autopath is immutable after construction and shared by every DNS thread; the
// functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"

namespace kdns::kubedns {

class Autopath {
 public:
  // `zone` is the cluster domain; `search` the node's domains (--autopath-search), in
  // order. Domains equal to or under `zone` are dropped (the walk has them already: a
  // kubedns whose resolv.conf is a pod's would otherwise repeat them), as are repeats.
  Autopath(const dns::Name& zone, const std::vector<dns::Name>& search);

  // The candidates' suffixes, in the walk's order: svc.Z, Z, the search domains, the root.
  const std::vector<dns::Name>& suffixes() const { return suffixes_; }
  const dns::Name& zone() const { return zone_; }

  // N (lower case) when `qname` is `N.<ns>.svc.Z` with N at least one label and <ns>
  // something that can be a namespace (an RFC 1123 label: [a-z0-9-], at most 63, starting
  // and ending with a letter or digit); nullopt for any other name (pod.Z, the reverse
  // zones, names outside Z).
  std::optional<dns::Name> Prefix(const dns::Name& qname) const;

 private:
  dns::Name zone_;
  std::vector<dns::Name> suffixes_;
};

// Who answered a candidate, for the answer's AA bit: only an answer wholly from our
// records is authoritative.
enum class AutopathSource : uint8_t { kOurs, kUpstream };

// The answer to the client's `query` (whose own answer is NXDOMAIN) when `candidate`
// exists: `reply` is the candidate's answer (NOERROR: records, possibly its own CNAME
// chain, or NODATA with the SOA). The answer section is `query.qname CNAME candidate`
// followed by the reply's records on the chain from `candidate` (chase.h, FollowChain: no
// record of another owner); the authority section keeps the reply's SOA for the chain's last
// name (a NODATA); the additional section the reply's additionals for kOurs only (an
// upstream's are not in its bailiwick for our name). Every TTL is at most the shortest in the
// answer (an SOA counts with min(TTL, MINIMUM), RFC 2308 §5) and at most `max_ttl_s` (our
// records' TTL, that of the CNAME we add). The header is the client's (ID, RD, CD), with
// RA, AA for kOurs, NOERROR; OPT only when the client sent one, with its DO bit.
dns::Message ComposeAutopathAnswer(const dns::Query& query, const dns::Name& candidate,
                                   const dns::Message& reply, AutopathSource source,
                                   uint32_t max_ttl_s);

// Whether `label` can be a namespace's name (RFC 1123 label, lower case).
bool IsNamespaceLabel(std::string_view label);

}  // namespace kdns::kubedns

// ExternalAnswerer: the external zones (--external-zone, CoreDNS's k8s_external), with no I/O.
// Under a zone E the operator names, a Service is reachable by the addresses clients
// outside the cluster use: its spec.externalIPs and status.loadBalancer.ingress (ips, and
// hostnames as CNAME). The Answerer hands it every question under one of the zones, with the
// response builder it has started; this writes the records and returns the rcode.
//
// Names and answers follow k8s_external (plugin/k8s_external, plugin/kubernetes/external.go):
//   E SOA   SOA ns1.dns.E. hostmaster.dns.E. serial 7200 1800 86400 <ttl>
//   E NS    ns1.dns.E.; other types at the apex: NODATA
//   ns1.dns.E A/AAAA  the external addresses of kubedns's own Service (ExternalConfig::
//     ns_service, --external-ns-service, kube-system/kube-dns), as k8s_external answers the
//     CoreDNS Service's; also the glue of the NS answer. NODATA when it has none of that
//     family; dns.E: NODATA; other names under dns.E: NXDOMAIN
//   svc.ns.E A/AAAA   the service's external IPs of that family; a service with only
//     load balancer hostnames: a CNAME to the first one, which the server chases upstream
//     (AnswerKind::kExternalTarget); never a CNAME next to addresses (RFC 2181 section 10.1)
//   svc.ns.E SRV      one SRV per service port (priority 0, weight floor(100/N) over the
//     N (address, port) pairs, as k8s_external), target svc.ns.E or the hostname, the
//     addresses of svc.ns.E in the additional section
//   _port._proto.svc.ns.E   the same, for that named port only (NXDOMAIN when the service has
//     no such port)
//   other types: NODATA; ns.E: NODATA while the namespace holds a service, else NXDOMAIN;
//   a service without external addresses, and every other name: NXDOMAIN with the SOA.
// A reverse zone (under in-addr.arpa or ip6.arpa, as k8s_external takes one among its
// zones) serves PTR records for external addresses: the address's name answers PTR
// svc.ns.F for each Service that has it, F the first forward zone (a reverse zone without
// one is refused at start-up), other types NODATA. An address that is no Service's external
// one keeps its cluster PTR (the Answerer asks the cluster's reverse index first; see
// ServesPtr), else NXDOMAIN; names shorter than an address's are NODATA (a Service's address
// may lie below them: RFC 8020).
// Differences from k8s_external: names of three labels under E (`x.svc.ns.E`) are
// NXDOMAIN (k8s_external answers them like svc.ns.E unless its `headless` option is on,
// which kdns does not offer); ns1.dns.E's Service is named, where k8s_external finds the
// Services whose endpoints hold its own pod IP; names shorter than an address's are NODATA,
// not NXDOMAIN. Negative answers carry the zone's SOA with TTL <ttl>.
// Until the first full sync, every name is SERVFAIL, as in the cluster zone.
//
// Thread-safe: const after construction; every DNS thread calls it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/rdata.h"
#include "common/dns/types.h"
#include "kubedns/records/record_tree.h"

namespace kdns::kubedns {

struct ExternalConfig {
  std::vector<dns::Name> zones;  // lower case; empty: no external zone is served
  uint32_t ttl_s = 5;            // --external-ttl; k8s_external's default
  // --external-ns-service: the Service whose external addresses ns1.dns.E answers, the one
  // clients outside reach kubedns by. Empty name: ns1.dns.E has no address.
  std::string ns_service_namespace = "kube-system";
  std::string ns_service_name = "kube-dns";
};

class ExternalAnswerer {
 public:
  explicit ExternalAnswerer(const ExternalConfig& config);

  // The index in config().zones of the zone `lower` (a lower-cased name) is in; nullopt
  // when none.
  std::optional<size_t> ZoneOf(const dns::Name& lower) const;

  // Answers the question (its name lower-cased in `lower`) under zones[zone] into `builder`;
  // returns the rcode. `serial` is the zone SOA's serial. When the answer is a CNAME to a
  // name kdns does not hold, *chase_target is set to it.
  dns::Rcode Answer(size_t zone, const Snapshot& snapshot, uint32_t serial, const dns::Name& lower,
                    const dns::Query& query, dns::MessageBuilder& builder,
                    std::optional<dns::Name>* chase_target) const;

  // True when `lower` (a reverse name under a reverse zone) is the name of some Service's
  // external address, whose PTR the external zone answers; false lets the cluster's
  // reverse index answer first.
  bool ServesPtr(const Snapshot& snapshot, const dns::Name& lower) const;

  const ExternalConfig& config() const { return config_; }

 private:
  struct ZoneNames {
    dns::Name apex;
    dns::Name dns;         // dns.E
    dns::Name ns_name;     // ns1.dns.E
    dns::Name hostmaster;  // hostmaster.dns.E
    bool reverse = false;  // under in-addr.arpa or ip6.arpa
  };

  dns::Rcode AnswerService(const ZoneNames& zone, const ExternalAddresses& external,
                           const std::vector<k8s::ServicePort>& ports, const dns::Name& lower,
                           const dns::Query& query, dns::MessageBuilder& builder,
                           std::optional<dns::Name>* chase_target) const;
  dns::Rcode AnswerPtr(const Snapshot& snapshot, const dns::Name& lower, const dns::Query& query,
                       dns::MessageBuilder& builder) const;
  // ns1.dns.E's addresses of `family` (the ns_service's external IPs) into `section`.
  void AddNsAddresses(const Snapshot& snapshot, const dns::Name& owner, IpFamily family,
                      dns::Section section, dns::MessageBuilder& builder) const;
  dns::RdataSoa Soa(const ZoneNames& zone, uint32_t serial) const;

  ExternalConfig config_;
  std::vector<ZoneNames> zones_;
  std::optional<dns::Name> ptr_zone_;  // the first forward zone: PTR targets lie under it
};

}  // namespace kdns::kubedns

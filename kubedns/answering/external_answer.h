// ExternalAnswerer: the external zones (--external-zone, CoreDNS's k8s_external), with no I/O.
// Under a zone E the operator names, a Service is reachable by the addresses clients
// outside the cluster use: its spec.externalIPs and status.loadBalancer.ingress (ips, and
// hostnames as CNAME). The Answerer hands it every question under one of the zones, with the
// response builder it has started; this writes the records and returns the rcode.
//
// Names and answers follow k8s_external (plugin/k8s_external, plugin/kubernetes/external.go):
//   E SOA   SOA ns1.dns.E. hostmaster.dns.E. serial 7200 1800 86400 <ttl>
//   E NS    ns1.dns.E.; other types at the apex: NODATA
//   dns.E, ns1.dns.E: NODATA (kdns does not know the address clients outside reach it at);
//     other names under dns.E: NXDOMAIN
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
// One difference from k8s_external: names of three labels under E (`x.svc.ns.E`) are
// NXDOMAIN; k8s_external answers them like svc.ns.E unless its `headless` option is on,
// which kdns does not offer. Negative answers carry the zone's SOA with TTL <ttl>.
// Until the first full sync, every name is SERVFAIL, as in the cluster zone.
//
// Thread-safe: const after construction; every DNS thread calls it.
#pragma once

#include <cstdint>
#include <optional>
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

  const ExternalConfig& config() const { return config_; }

 private:
  struct ZoneNames {
    dns::Name apex;
    dns::Name dns;         // dns.E
    dns::Name ns_name;     // ns1.dns.E
    dns::Name hostmaster;  // hostmaster.dns.E
  };

  dns::Rcode AnswerService(const ZoneNames& zone, const ExternalAddresses& external,
                           const std::vector<k8s::ServicePort>& ports, const dns::Name& lower,
                           const dns::Query& query, dns::MessageBuilder& builder,
                           std::optional<dns::Name>* chase_target) const;
  dns::RdataSoa Soa(const ZoneNames& zone, uint32_t serial) const;

  ExternalConfig config_;
  std::vector<ZoneNames> zones_;
};

}  // namespace kdns::kubedns

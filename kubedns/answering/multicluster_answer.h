// MulticlusterAnswerer: the answer rules of the two multicluster zones (DESIGN.md section 8),
// with no I/O. The Answerer hands it every question under one of the zones, with the
// response builder it has started (header, question, EDNS); this writes the records and
// returns the rcode.
//
//   MCS zone Zm (clusterset.local., --multicluster-zone; KEP-1645's DNS specification):
//     Zm SOA/NS; dns-version.Zm TXT "1.0.0";
//     svc.ns.svc.Zm A/AAAA: ClusterSetIP import → its IPs; headless → the ready endpoints of
//       every cluster (NXDOMAIN when none);
//     svc.ns.svc.Zm SRV: as in the cluster zone, one per address entry with port 0 (the
//       import name for ClusterSetIP, each endpoint name for headless);
//     _port._proto.svc.ns.svc.Zm SRV: ClusterSetIP → the import name and port; headless → one
//       per endpoint name with its cluster's port; the targets' addresses in the additional
//       section;
//     host.cluster.svc.ns.svc.Zm A/AAAA: that endpoint of that cluster;
//     cluster.svc.ns.svc.Zm, _proto.svc.ns.svc.Zm, ns.svc.Zm, svc.Zm: empty non-terminals
//       (NODATA) while something exists below them, else NXDOMAIN. No PTR: reverse names
//       stay the cluster zone's.
//   kubeslice zone Zk (slice.local., --kubeslice-zone): each name of a ServiceImport → A (and
//     AAAA) of its endpoints, TTL 60; the names' parents are empty non-terminals.
// Negative answers carry the zone's own SOA (ns.dns.<zone> hostmaster.<zone>), TTL the SOA
// minimum. ANY gets one RRset (RFC 8482), as in the cluster zone. Until a zone's source has
// synced, its names are answered SERVFAIL.
//
// Thread-safe: const after construction; every DNS thread calls it.
#pragma once

#include <cstdint>
#include <optional>

#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/rdata.h"
#include "common/dns/types.h"
#include "kubedns/answering/soa.h"
#include "kubedns/records/multicluster_records.h"

namespace kdns::kubedns {

struct MulticlusterConfig {
  std::optional<dns::Name> mcs_zone;        // lower case; unset: the zone is not served
  std::optional<dns::Name> kubeslice_zone;  // lower case; unset: the zone is not served
  uint32_t ttl_s = 30;                      // MCS records: the cluster zone's TTL
  uint32_t kubeslice_ttl_s = 60;            // as kubeslice's own DNS
  SoaTimers soa;                            // the cluster zone's
};

class MulticlusterAnswerer {
 public:
  enum class Zone : uint8_t { kNone, kMcs, kKubeslice };

  explicit MulticlusterAnswerer(const MulticlusterConfig& config);

  // Which of the zones `lower` (a lower-cased name) is in.
  Zone ZoneOf(const dns::Name& lower) const;

  // Answers the question (its name lower-cased in `lower`) into `builder`; returns the rcode.
  // `snapshot` may be null (nothing published yet); `serial` is the zone SOA's serial.
  dns::Rcode Answer(Zone zone, const MulticlusterSnapshot* snapshot, uint32_t serial,
                    const dns::Name& lower, const dns::Query& query,
                    dns::MessageBuilder& builder) const;

 private:
  struct ZoneNames {
    dns::Name apex;
    dns::Name ns_name;     // ns.dns.<zone>
    dns::Name hostmaster;  // hostmaster.<zone>
  };
  class Writer;

  dns::Rcode AnswerMcs(const MulticlusterSnapshot& snapshot, const dns::Name& lower,
                       Writer& out) const;
  dns::Rcode AnswerKubeslice(const MulticlusterSnapshot& snapshot, const dns::Name& lower,
                             Writer& out) const;
  dns::RdataSoa Soa(const ZoneNames& zone, uint32_t serial) const;

  MulticlusterConfig config_;
  std::optional<ZoneNames> mcs_;
  std::optional<ZoneNames> kubeslice_;
  dns::RdataTxt version_txt_;
};

}  // namespace kdns::kubedns

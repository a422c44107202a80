// Answerer: the protocol logic of kubedns, with no I/O. Given a snapshot of the record
// tree and a query, it writes the response bytes (Kubernetes DNS-Based Service Discovery
// 1.1.0, see DESIGN.md section 3):
//   dns-version.Z TXT, SOA and NS at the apex, svc.ns.svc.Z for ClusterIP (cluster IPs),
//   headless (ready endpoints) and ExternalName (CNAME, chased inside Z) services,
//   host.svc.ns.svc.Z, _port._proto.svc.ns.svc.Z SRV with the targets' addresses in the
//   additional section, PTR for cluster IPs and headless endpoints, a-b-c-d.ns.pod.Z,
//   NODATA for names that exist only as parents, NXDOMAIN with the SOA otherwise.
// ANY gets an RFC 8482 minimal answer, over UDP and TCP: one RRset of the name (a service's
// or host's A records, AAAA when it has no IPv4 address; the SOA at the apex; the SRV,
// TXT, PTR or CNAME of names that have only that), NODATA or NXDOMAIN as for any type.
// Responses echo the question's case, carry OPT only when the query had one (advertising
// 1232), and over UDP are cut at a whole RRset with TC set at the admission's reply limit.
//
// The query arrives admitted (common/server/admission.h, with kAdmissionPolicy): malformed
// queries, EDNS versions, opcodes, classes and zone transfers were decided there, and
// Answer turns a verdict other than kAdmitted into its result (kDropped, kFormErr, or the
// refusal answered).
//
// Names under the multicluster zones (AnswerConfig::multicluster_zone, kubeslice_zone, when
// set) are answered by MulticlusterAnswerer (multicluster_answer.h), AA set, from the same
// snapshot; names under the external zones (AnswerConfig::external) by ExternalAnswerer
// (external_answer.h).
//
// With AnswerConfig::zonal (--zonal, CoreDNS 1.14's `kubernetes` option `zonal`), the names
// <zone>.pin._zone.svc.ns.svc.Z and <zone>.prefer._zone.svc.ns.svc.Z of a headless service
// stand for its endpoints in topology zone <zone> (every label left of the directive, joined
// by dots: us-east-1a, eu.west.1), compared with the EndpointSlice's endpoints[].zone
// without regard to case (CoreDNS lower-cases both). pin: those endpoints, NODATA when the zone has
// none; prefer: those, or every endpoint when the zone has none. A, AAAA and ANY are answered like
// the service's name, SRV like the service's SRV with only the zone's targets and their glue, other
// types NODATA. ClusterIP and ExternalName services, unknown services and unknown directives:
// NXDOMAIN. The result names the directive and the outcome (kdns_kubedns_zonal_queries_total).
//
// Names outside Z and reverse names of IPs kubedns holds nothing for are not ours: the
// result says so (AnswerKind::kNotOurs) and the server forwards them (skydns forwards a
// reverse name it cannot answer, too). Before the first full sync a reverse name gets
// SERVFAIL like the cluster zone: it cannot yet tell whether the IP is a cluster's.
//
// An ExternalName service whose CNAME chain leaves Z (`www.example.com`) is answered as far
// as kubedns can: the CNAME records, then AnswerKind::kExternalTarget with the name the chain
// ends at, so the server can ask an upstream for it and append the answer. CNAME and ANY
// queries get the CNAME alone (kAnswered), as before.
//
// Thread-safe: const after construction; every DNS thread calls it concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/rdata.h"
#include "common/dns/reverse.h"
#include "common/dns/types.h"
#include "common/server/admission.h"
#include "kubedns/answering/external_answer.h"
#include "kubedns/answering/multicluster_answer.h"
#include "kubedns/answering/soa.h"
#include "kubedns/records/record_tree.h"

namespace kdns::kubedns {

enum class PodRecords : uint8_t { kInsecure, kVerified, kDisabled };

// What kubedns asks of admission: an authoritative server of class IN refuses other
// classes and zone transfers.
inline constexpr server::AdmissionPolicy kAdmissionPolicy{server::ClassScope::kInternetOnly};

struct AnswerConfig {
  dns::Name zone;  // the cluster domain, e.g. cluster.local.
  uint32_t ttl_s = 30;
  PodRecords pod_records = PodRecords::kInsecure;
  SoaTimers soa;  // kube-dns's
  // The serial of every zone served is this plus the snapshot's records_version(): it
  // changes exactly when the records change (records/record_tree.h), by one (RFC 1982 arithmetic).
  uint32_t soa_serial_base = 0;
  // The multicluster zones (multicluster_answer.h), lower case; unset: not served.
  std::optional<dns::Name> multicluster_zone;  // --multicluster-zone (clusterset.local.)
  std::optional<dns::Name> kubeslice_zone;     // --kubeslice-zone (slice.local.)
  // The external zones (external_answer.h): --external-zone, --external-ttl.
  ExternalConfig external;
  // kPrepared: the frequent records are written from templates prepared at construction
  // (the negative answers' SOA); kGeneral: every record through the general builder, which
  // the tests use to prove the prepared ones byte-identical.
  enum class Writing : uint8_t { kPrepared, kGeneral };
  Writing writing = Writing::kPrepared;
  bool zonal = false;  // --zonal: answer the zone-scoped names of headless services
};

// A zonal name's directive (kNone: the query was not one) and what answered it.
enum class ZonalDirective : uint8_t { kNone, kPin, kPrefer };
enum class ZonalOutcome : uint8_t {
  kZone,      // the zone's endpoints
  kFallback,  // prefer, and the zone has none: every endpoint
  kEmpty,     // nothing to answer with (pin and the zone has none, or no endpoints): NODATA
  kNxDomain,  // no such headless service
};

enum class AnswerKind : uint8_t {
  kAnswered,        // a response was written
  kFormErr,         // malformed query answered FORMERR
  kDropped,         // not worth an answer (no header, or a response): nothing written
  kNotOurs,         // outside the zones kubedns serves: forward it (the response written is
                    // REFUSED, for a server that does not forward)
  kExternalTarget,  // the response holds a CNAME chain that leaves Z at `chase_target`
                    // (NOERROR, the CNAMEs in the answer section); the server completes it
};

struct AnswerResult {
  AnswerKind kind = AnswerKind::kDropped;
  dns::Rcode rcode = dns::Rcode::kNoError;
  dns::RrType qtype = dns::RrType::kA;
  bool truncated = false;
  bool reverse = false;               // the question was under in-addr.arpa or ip6.arpa
  std::span<const uint8_t> response;  // a view of the caller's buffer
  // kExternalTarget only: the CNAME target outside Z, as the service spells it.
  dns::Name chase_target;
  ZonalDirective zonal_directive = ZonalDirective::kNone;
  ZonalOutcome zonal_outcome = ZonalOutcome::kZone;  // meaningful with a directive only
};

class Answerer {
 public:
  explicit Answerer(const AnswerConfig& config);

  // Whether `qname` is a reverse name (under in-addr.arpa or ip6.arpa, any case): the
  // skydns "reverse" system its answer is counted under.
  bool IsReverse(const dns::Name& qname) const { return dns::IsReverseName(qname); }

  // Answers the admitted query into `buffer` (at least admission.reply_limit_bytes).
  // `snapshot` may be null before the first publish. Never throws.
  AnswerResult Answer(const Snapshot* snapshot, const server::Admission& admission,
                      std::span<uint8_t> buffer) const;

  const AnswerConfig& config() const { return config_; }
  // Z's SOA: its serial is the base plus the snapshot's records_version().
  uint32_t SoaSerial(const Snapshot& snapshot) const;
  dns::RdataSoa Soa(uint32_t serial) const;
  // The zones kubedns serves, lower case: Z, the reverse zones, the multicluster zones it is
  // configured with. All share Z's serial (NotifySender names each).
  std::vector<dns::Name> ServedZones() const;

 private:
  class Response;
  // Which hosts of a headless service an answer uses: all, or those of one zone.
  struct HostFilter {
    std::optional<uint16_t> zone;  // an index into ServiceRecords::zones()
    bool Keeps(const ServiceRecords::Host& host) const { return !zone || host.zone == *zone; }
  };

  void AnswerZone(const Snapshot& snapshot, const dns::Name& lower, Response& response) const;
  void AnswerService(const Snapshot& snapshot, const ServiceRecords& records,
                     const dns::Name& owner, std::string_view ns, std::string_view name,
                     Response& response, int depth) const;
  void AnswerHosts(std::span<const ServiceRecords::Host> hosts, const dns::Name& owner,
                   Response& response, HostFilter filter = {}) const;
  void AnswerSrv(const ServiceRecords& records, const ServiceRecords::SrvSet* set,
                 std::string_view ns, std::string_view name, Response& response,
                 HostFilter filter = {}) const;
  // <zone>.<directive>._zone.svc.ns.svc.Z (`depth` labels below Z, at least 6).
  void AnswerZonal(const Snapshot& snapshot, const dns::Name& lower, size_t depth,
                   Response& response) const;
  // The address a-b-c-d.ns.pod.Z stands for, or nullopt when that name does not exist (not
  // an address, or under kVerified no live pod of `ns` has it).
  std::optional<IpAddress> PodAddress(const Snapshot& snapshot, std::string_view ns,
                                      std::string_view dashed) const;
  void AnswerPod(const Snapshot& snapshot, std::string_view ns, std::string_view dashed,
                 const dns::Name& owner, Response& response) const;
  bool AnswerReverse(const Snapshot& snapshot, const dns::Name& lower, Response& response) const;
  // Answers `target` (lower case, inside Z) as a step of a CNAME chain.
  void Chase(const Snapshot& snapshot, const dns::Name& target, Response& response,
             int depth) const;
  // The negative answer's authority section: the SOA of Z (RFC 2308), from soa_template_
  // when it applies, else through the general builder.
  void AddNegativeSoa(const Snapshot& snapshot, const dns::Name& lower, size_t depth,
                      Response& response) const;

  AnswerConfig config_;
  MulticlusterAnswerer multicluster_;
  ExternalAnswerer external_;
  dns::Name ns_name_;     // ns.dns.Z
  dns::Name hostmaster_;  // hostmaster.Z
  dns::RdataTxt version_txt_;
  // The SOA record of a negative answer as the builder writes it after a question under Z
  // when nothing else is written yet: owner, MNAME's and RNAME's suffix all pointers to Z
  // in the question (patched per query, like the serial). Empty when Z is the root.
  std::vector<uint8_t> soa_template_;
  size_t soa_mname_pointer_ = 0;  // offsets in soa_template_
  size_t soa_rname_pointer_ = 0;
  size_t soa_serial_ = 0;
};

}  // namespace kdns::kubedns

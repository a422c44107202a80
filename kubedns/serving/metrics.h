// Metrics of kubedns's DNS path, registered on the program's Registry.
//
// kube-dns compatibility: the skydns families kube-dns exports, with their names, help
// texts, labels and buckets (namespace and subsystem "skydns", or PROMETHEUS_NAMESPACE and
// PROMETHEUS_SUBSYSTEM from the environment, as skydns reads them):
//   <ns>_<sub>_dns_request_count_total{system}         system: auth, reverse, recursive
//   <ns>_<sub>_dns_request_duration_seconds{system}
//   <ns>_<sub>_dns_response_size_bytes{system}
//   <ns>_<sub>_dns_error_count_total{system,cause}     cause: nxdomain, servfail, refused,
//                                                      truncated
//   <ns>_<sub>_dns_cachemiss_count_total{cache}        (kubedns has no cache: no series)
// A query is counted once, when it is answered: "reverse" for every name under
// in-addr.arpa and ip6.arpa (forwarded ones too, as skydns counts them), "recursive" for
// the other names forwarded to upstreams, "auth" for the rest (an ExternalName chain
// completed upstream included); response size and errors are those of the answer sent.
// Our own, with Prometheus naming: kdns_kubedns_queries_total{type,rcode} (both labels from
// small fixed sets, every answered query), kdns_kubedns_query_duration_seconds (queries
// answered from the records; see forward_metrics.h for the others),
// kdns_kubedns_malformed_total, kdns_kubedns_dropped_total, kdns_kubedns_truncated_total,
// kdns_kubedns_zonal_queries_total{directive,outcome} (--zonal names: pin|prefer by zone,
// fallback, empty, nxdomain; see ZonalOutcome).
//
// Every counter the DNS threads touch is resolved once here, so recording a query is a few
// per-thread increments with no lookup. Thread-safe: Record() from any DNS thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/dns/types.h"
#include "common/metrics/registry.h"
#include "kubedns/answering/answerer.h"

namespace kdns::kubedns {

class DnsMetrics {
 public:
  // Label values of the fixed sets.
  static constexpr std::array<dns::RrType, 9> kTypes = {
      dns::RrType::kA,   dns::RrType::kAaaa,  dns::RrType::kSrv,
      dns::RrType::kPtr, dns::RrType::kTxt,   dns::RrType::kSoa,
      dns::RrType::kNs,  dns::RrType::kCname, dns::RrType::kAny};
  static constexpr std::array<dns::Rcode, 6> kRcodes = {
      dns::Rcode::kNoError, dns::Rcode::kNxDomain, dns::Rcode::kServFail,
      dns::Rcode::kRefused, dns::Rcode::kFormErr,  dns::Rcode::kNotImp};

  // `prefix` is "<namespace>_<subsystem>", normally from SkydnsPrefixFromEnvironment().
  DnsMetrics(metrics::Registry& registry, const std::string& prefix);

  // One answered (or dropped) query.
  void Record(const AnswerResult& result, size_t response_bytes, double seconds);

  static std::string SkydnsPrefixFromEnvironment();

 private:
  enum System { kAuth, kReverse, kRecursive, kSystems };
  struct PerSystem {
    metrics::Counter* requests;
    metrics::Histogram* duration;
    metrics::Histogram* size;
    metrics::Counter* nxdomain;
    metrics::Counter* servfail;
    metrics::Counter* refused;
    metrics::Counter* truncated;
  };

  std::array<PerSystem, kSystems> systems_;
  // [type index (kTypes.size() = other)][rcode index (kRcodes.size() = other)]
  std::array<std::array<metrics::Counter*, kRcodes.size() + 1>, kTypes.size() + 1> queries_;
  metrics::Histogram* query_duration_;
  metrics::Counter* malformed_;
  metrics::Counter* dropped_;
  metrics::Counter* truncated_;
  // [directive: pin, prefer][ZonalOutcome]
  std::array<std::array<metrics::Counter*, 4>, 2> zonal_{};
};

}  // namespace kdns::kubedns

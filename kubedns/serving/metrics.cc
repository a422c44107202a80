#include "kubedns/serving/metrics.h"

#include <cstdlib>
#include <vector>

namespace kdns::kubedns {

namespace {

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

}  // namespace

std::string DnsMetrics::SkydnsPrefixFromEnvironment() {
  return EnvOr("PROMETHEUS_NAMESPACE", "skydns") + "_" + EnvOr("PROMETHEUS_SUBSYSTEM", "skydns");
}

DnsMetrics::DnsMetrics(metrics::Registry& registry, const std::string& prefix) {
  // The skydns families, exactly as skydns defines them.
  auto& requests = registry.AddCounterFamily(prefix + "_dns_request_count_total",
                                             "Counter of DNS requests made.", {"system"});
  std::vector<double> duration_buckets = {0.001, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25,  0.5,   1,     2.5,  5,     10};
  auto& duration = registry.AddHistogramFamily(
      prefix + "_dns_request_duration_seconds",
      "Histogram of the time (in seconds) each request took to resolve.", {"system"},
      duration_buckets);
  auto& size = registry.AddHistogramFamily(
      prefix + "_dns_response_size_bytes", "Size of the returns response in bytes.", {"system"},
      {0,     512,   1024,  1500,  2048,  4096,  8192,  12288, 16384, 20480, 24576,
       28672, 32768, 36864, 40960, 45056, 49152, 53248, 57344, 61440, 65536});
  auto& errors = registry.AddCounterFamily(prefix + "_dns_error_count_total",
                                           "Counter of DNS requests resulting in an error.",
                                           {"system", "cause"});
  registry.AddCounterFamily(prefix + "_dns_cachemiss_count_total",
                            "Counter of DNS requests that result in a cache miss.", {"cache"});
  const char* system_names[kSystems] = {"auth", "reverse", "recursive"};
  for (int s = 0; s < kSystems; ++s) {
    const char* system = system_names[s];
    systems_[s] = PerSystem{&requests.WithLabels({system}),
                            &duration.WithLabels({system}),
                            &size.WithLabels({system}),
                            &errors.WithLabels({system, "nxdomain"}),
                            &errors.WithLabels({system, "servfail"}),
                            &errors.WithLabels({system, "refused"}),
                            &errors.WithLabels({system, "truncated"})};
  }

  auto& queries = registry.AddCounterFamily("kdns_kubedns_queries_total",
                                            "DNS queries answered by kubedns, by type and rcode.",
                                            {"type", "rcode"});
  for (size_t t = 0; t <= kTypes.size(); ++t) {
    std::string type = t < kTypes.size() ? dns::RrTypeToText(kTypes[t]) : "other";
    for (size_t r = 0; r <= kRcodes.size(); ++r) {
      std::string rcode = r < kRcodes.size() ? dns::RcodeToText(kRcodes[r]) : "other";
      queries_[t][r] = &queries.WithLabels({type, rcode});
    }
  }
  query_duration_ = &registry.AddHistogram(
      "kdns_kubedns_query_duration_seconds", "Time from reading a query to its answer.",
      {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01});
  malformed_ =
      &registry.AddCounter("kdns_kubedns_malformed_total", "Malformed queries (answered FORMERR).");
  dropped_ = &registry.AddCounter("kdns_kubedns_dropped_total",
                                  "Packets dropped without an answer (no header, or a response).");
  truncated_ =
      &registry.AddCounter("kdns_kubedns_truncated_total", "UDP responses truncated (TC set).");
  auto& zonal = registry.AddCounterFamily(
      "kdns_kubedns_zonal_queries_total",
      "Queries for zone-scoped names (--zonal), by directive and by what answered them.",
      {"directive", "outcome"});
  const char* directives[] = {"pin", "prefer"};
  // Indexed by ZonalOutcome.
  const char* outcomes[] = {"zone", "fallback", "empty", "nxdomain"};
  for (size_t d = 0; d < zonal_.size(); ++d) {
    for (size_t o = 0; o < zonal_[d].size(); ++o) {
      // pin never falls back: no series that can only stay zero.
      if (d == 0 && o == static_cast<size_t>(ZonalOutcome::kFallback)) continue;
      zonal_[d][o] = &zonal.WithLabels({directives[d], outcomes[o]});
    }
  }
}

void DnsMetrics::Record(const AnswerResult& result, size_t response_bytes, double seconds) {
  if (result.kind == AnswerKind::kDropped) {
    dropped_->Inc();
    return;
  }
  if (result.kind == AnswerKind::kFormErr) malformed_->Inc();
  // skydns: reverse names are "reverse" also when forwarded (ServeDNSReverse forwards what
  // it cannot answer); other names it does not own are "recursive"; the rest, ExternalName
  // chains completed upstream included, "auth".
  const bool forwarded = result.kind == AnswerKind::kNotOurs;
  System system = result.reverse ? kReverse : forwarded ? kRecursive : kAuth;
  PerSystem& per = systems_[system];
  per.requests->Inc();
  per.duration->Observe(seconds);
  per.size->Observe(static_cast<double>(response_bytes));
  if (result.truncated) {
    per.truncated->Inc();
    truncated_->Inc();
  } else if (result.rcode == dns::Rcode::kNxDomain) {
    per.nxdomain->Inc();
  } else if (result.rcode == dns::Rcode::kServFail) {
    per.servfail->Inc();
  } else if (result.rcode == dns::Rcode::kRefused) {
    per.refused->Inc();
  }
  size_t t = 0;
  while (t < kTypes.size() && kTypes[t] != result.qtype) ++t;
  size_t r = 0;
  while (r < kRcodes.size() && kRcodes[r] != result.rcode) ++r;
  queries_[t][r]->Inc();
  if (result.zonal_directive != ZonalDirective::kNone) {
    const size_t d = result.zonal_directive == ZonalDirective::kPin ? 0 : 1;
    metrics::Counter* zonal = zonal_[d][static_cast<size_t>(result.zonal_outcome)];
    if (zonal != nullptr) zonal->Inc();
  }
  // Answered here, from the records; forwarded and chased queries are timed in
  // kdns_kubedns_forward_duration_seconds.
  if (!forwarded && result.kind != AnswerKind::kExternalTarget) query_duration_->Observe(seconds);
}

}  // namespace kdns::kubedns

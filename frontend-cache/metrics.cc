#include "frontend-cache/metrics.h"

#include <string>

namespace kdns::frontend {

FrontendMetrics::FrontendMetrics(metrics::Registry& registry) {
  auto& queries = registry.AddCounterFamily(
      "kdns_frontend_queries_total", "DNS queries answered, by question type and response code.",
      {"type", "rcode"});
  for (size_t t = 0; t <= kTypes.size(); ++t) {
    const std::string type = t < kTypes.size() ? dns::RrTypeToText(kTypes[t]) : "other";
    for (size_t r = 0; r <= kRcodes.size(); ++r) {
      const std::string rcode = r < kRcodes.size() ? dns::RcodeToText(kRcodes[r]) : "other";
      queries_[t][r] = &queries.WithLabels({type, rcode});
    }
  }
  malformed_ = &registry.AddCounter("kdns_frontend_malformed_total",
                                    "Queries that did not parse: answered FORMERR or dropped.");
  auto& servfail = registry.AddCounterFamily(
      "kdns_frontend_servfail_total",
      "SERVFAIL answers made here because no upstream gave a usable answer, by reason.",
      {"reason"});
  for (size_t i = 0; i < servfail_.size(); ++i) {
    const auto failure = static_cast<upstream::ForwardFailure>(i);
    if (failure == upstream::ForwardFailure::kChain) continue;  // kubedns's ExternalName chains
    servfail_[i] = &servfail.WithLabels({upstream::ForwardFailureName(failure)});
  }
  auto& local = registry.AddCounterFamily(
      "kdns_frontend_local_answers_total",
      "Queries answered without asking an upstream (cache hits aside), by kind.", {"kind"});
  const char* kinds[] = {"chaos",   "nxdomain",    "refused",       "loop_probe", "hosts",
                         "address", "filter_aaaa", "domain_needed", "bogus_priv"};
  for (size_t i = 0; i < local_.size(); ++i) local_[i] = &local.WithLabels({kinds[i]});
  // From a cache hit (tens of microseconds) to an upstream timing out (seconds).
  auto& answer_seconds = registry.AddHistogramFamily(
      "kdns_frontend_answer_duration_seconds",
      "Time from a query's hand-over to its answer, by where the answer came from.", {"source"},
      {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
       2.5, 5});
  for (size_t i = 0; i < answer_seconds_.size(); ++i) {
    answer_seconds_[i] = &answer_seconds.WithLabels(
        {server::AnswerSourceName(static_cast<server::AnswerSource>(i))});
  }
}

size_t FrontendMetrics::TypeIndex(dns::RrType type) {
  for (size_t i = 0; i < kTypes.size(); ++i) {
    if (kTypes[i] == type) return i;
  }
  return kTypes.size();
}

size_t FrontendMetrics::RcodeIndex(dns::Rcode rcode) {
  for (size_t i = 0; i < kRcodes.size(); ++i) {
    if (kRcodes[i] == rcode) return i;
  }
  return kRcodes.size();
}

}  // namespace kdns::frontend

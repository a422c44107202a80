#include "kubedns/serving/metrics.h"

#include <catch2/catch.hpp>

#include "common/metrics/text_parser.h"

namespace kdns::kubedns {

TEST_CASE("answered queries are counted in the skydns and kdns families", "[kubedns][metrics]") {
  metrics::Registry registry;
  DnsMetrics dns_metrics(registry, "skydns_skydns");
  AnswerResult ok;
  ok.kind = AnswerKind::kAnswered;
  ok.qtype = dns::RrType::kA;
  ok.rcode = dns::Rcode::kNoError;
  AnswerResult nx = ok;
  nx.rcode = dns::Rcode::kNxDomain;
  nx.qtype = dns::RrType::kMx;  // not in the fixed set: counted as "other"
  AnswerResult forwarded = ok;
  forwarded.kind = AnswerKind::kNotOurs;
  forwarded.rcode = dns::Rcode::kRefused;
  AnswerResult dropped;
  AnswerResult reverse = ok;
  reverse.reverse = true;
  AnswerResult forwarded_reverse = forwarded;  // skydns counts it as "reverse"
  forwarded_reverse.reverse = true;
  forwarded_reverse.rcode = dns::Rcode::kNxDomain;
  AnswerResult chased = ok;  // an ExternalName chain completed upstream: "auth"
  chased.kind = AnswerKind::kExternalTarget;
  dns_metrics.Record(ok, 100, 0.00002);
  dns_metrics.Record(reverse, 100, 0.00002);
  dns_metrics.Record(nx, 90, 0.00002);
  dns_metrics.Record(forwarded, 40, 0.00001);
  dns_metrics.Record(dropped, 0, 0);
  dns_metrics.Record(forwarded_reverse, 90, 0.02);
  dns_metrics.Record(chased, 120, 0.02);

  std::string error;
  auto parsed = metrics::ParseText(registry.Render(), &error);
  INFO(error);
  REQUIRE(parsed);
  auto& s = parsed->samples;
  CHECK(s.at(R"(skydns_skydns_dns_request_count_total{system="auth"})") == 3);
  CHECK(s.at(R"(skydns_skydns_dns_request_count_total{system="reverse"})") == 2);
  CHECK(s.at(R"(skydns_skydns_dns_error_count_total{system="reverse",cause="nxdomain"})") == 1);
  CHECK(s.at(R"(skydns_skydns_dns_request_count_total{system="recursive"})") == 1);
  CHECK(s.at(R"(skydns_skydns_dns_error_count_total{system="auth",cause="nxdomain"})") == 1);
  CHECK(s.at(R"(skydns_skydns_dns_error_count_total{system="recursive",cause="refused"})") == 1);
  CHECK(s.at(R"(skydns_skydns_dns_response_size_bytes_count{system="auth"})") == 3);
  CHECK(s.at(R"(kdns_kubedns_queries_total{type="A",rcode="NOERROR"})") == 3);
  CHECK(s.at(R"(kdns_kubedns_queries_total{type="other",rcode="NXDOMAIN"})") == 1);
  CHECK(s.at("kdns_kubedns_dropped_total") == 1);
  // Forwarded and chased queries are timed in kdns_kubedns_forward_duration_seconds.
  CHECK(s.at("kdns_kubedns_query_duration_seconds_count") == 3);
  CHECK(parsed->types.at("skydns_skydns_dns_request_duration_seconds") == "histogram");
  CHECK(parsed->helps.at("skydns_skydns_dns_response_size_bytes") ==
        "Size of the returns response in bytes.");
}

TEST_CASE("the skydns prefix follows PROMETHEUS_NAMESPACE and PROMETHEUS_SUBSYSTEM",
          "[kubedns][metrics]") {
  unsetenv("PROMETHEUS_NAMESPACE");
  unsetenv("PROMETHEUS_SUBSYSTEM");
  CHECK(DnsMetrics::SkydnsPrefixFromEnvironment() == "skydns_skydns");
  setenv("PROMETHEUS_NAMESPACE", "kubedns", 1);
  setenv("PROMETHEUS_SUBSYSTEM", "kubedns", 1);
  CHECK(DnsMetrics::SkydnsPrefixFromEnvironment() == "kubedns_kubedns");
  unsetenv("PROMETHEUS_NAMESPACE");
  unsetenv("PROMETHEUS_SUBSYSTEM");
}

}  // namespace kdns::kubedns

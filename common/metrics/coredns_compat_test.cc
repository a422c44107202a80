#include "common/metrics/coredns_compat.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "common/metrics/registry.h"

namespace kdns::metrics {
namespace {

CorednsSources FrontendLike() {
  CorednsSources s;
  s.server = "dns://:53";
  s.queries = "q_total";
  s.duration = "d_seconds";
  s.cache_hits = "hits_total";
  s.cache_misses = "misses_total";
  s.cache_entries = "entries";
  s.cache_negative_entries = "negative_entries";
  s.upstream_prefix = "up";
  s.all_upstreams_down = R"(servfail_total{reason="upstream_down"})";
  s.forward_rejected = "rejected_total";
  return s;
}

// A registry shaped like frontend-cache's, with known values.
std::string OurText() {
  Registry registry;
  auto& queries = registry.AddCounterFamily("q_total", "q", {"type", "rcode"});
  queries.WithLabels({"A", "NOERROR"}).Inc(5);
  queries.WithLabels({"A", "SERVFAIL"}).Inc(2);
  queries.WithLabels({"AAAA", "NXDOMAIN"}).Inc(3);
  auto& duration = registry.AddHistogramFamily("d_seconds", "d", {"source"}, {0.001, 0.1});
  duration.WithLabels({"cache"}).Observe(0.0005);
  duration.WithLabels({"upstream"}).Observe(0.05);
  duration.WithLabels({"upstream"}).Observe(3);
  registry.AddCounter("hits_total", "h").Inc(7);
  registry.AddCounter("misses_total", "m").Inc(3);
  registry.AddGauge("entries", "e").Set(10);
  registry.AddGauge("negative_entries", "n").Set(4);
  auto& sent = registry.AddCounterFamily("up_queries_total", "s", {"upstream"});
  sent.WithLabels({"10.0.0.1#53"}).Inc(4);
  sent.WithLabels({"tcp://fd00::1#5353"}).Inc(1);
  auto& replies = registry.AddCounterFamily("up_replies_total", "r", {"upstream", "rcode"});
  replies.WithLabels({"10.0.0.1#53", "NOERROR"}).Inc(3);
  replies.WithLabels({"10.0.0.1#53", "SERVFAIL"}).Inc(1);
  registry.AddCounterFamily("up_timeouts_total", "t", {"upstream"})
      .WithLabels({"fd00::1#5353"})
      .Inc(2);
  auto& rtt = registry.AddHistogramFamily("up_rtt_seconds", "rtt", {"upstream"}, {0.01});
  rtt.WithLabels({"10.0.0.1#53"}).Observe(0.005);
  auto& servfail = registry.AddCounterFamily("servfail_total", "f", {"reason"});
  servfail.WithLabels({"upstream_down"}).Inc(6);
  servfail.WithLabels({"timeout"}).Inc(1);
  registry.AddCounter("rejected_total", "x").Inc(8);
  return registry.Render();
}

TEST_CASE("CoreDNS's families are sums of ours, with CoreDNS's names and labels", "[metrics]") {
  const std::string text = WithCorednsFamilies(OurText(), FrontendLike());
  std::string error;
  const std::optional<ParsedText> parsed = ParseText(text, &error);
  INFO(error << "\n" << text);
  REQUIRE(parsed);
  auto at = [&](const std::string& key) {
    INFO(key);
    REQUIRE(parsed->samples.count(key) == 1);
    return parsed->samples.at(key);
  };
  const std::string dns = R"(server="dns://:53",zone=".")";
  CHECK(at("coredns_dns_requests_total{" + dns + R"(,type="A"})") == 7);
  CHECK(at("coredns_dns_requests_total{" + dns + R"(,type="AAAA"})") == 3);
  CHECK(at("coredns_dns_responses_total{" + dns + R"(,rcode="NOERROR"})") == 5);
  CHECK(at("coredns_dns_responses_total{" + dns + R"(,rcode="SERVFAIL"})") == 2);
  CHECK(at("coredns_dns_responses_total{" + dns + R"(,rcode="NXDOMAIN"})") == 3);
  // Every source's histogram summed bucket by bucket.
  CHECK(at("coredns_dns_request_duration_seconds_bucket{" + dns + R"(,le="0.001"})") == 1);
  CHECK(at("coredns_dns_request_duration_seconds_bucket{" + dns + R"(,le="0.1"})") == 2);
  CHECK(at("coredns_dns_request_duration_seconds_bucket{" + dns + R"(,le="+Inf"})") == 3);
  CHECK(at("coredns_dns_request_duration_seconds_count{" + dns + "}") == 3);
  CHECK(at("coredns_dns_request_duration_seconds_sum{" + dns + "}") == Approx(3.0505));
  const std::string cache = R"(server="dns://:53")";
  CHECK(at("coredns_cache_entries{" + cache + R"(,type="denial",zones="."})") == 4);
  CHECK(at("coredns_cache_entries{" + cache + R"(,type="success",zones="."})") == 6);
  CHECK(at("coredns_cache_hits_total{" + cache + R"(,type="success",zones="."})") == 7);
  CHECK(at("coredns_cache_misses_total{" + cache + R"(,zones="."})") == 3);
  CHECK(at("coredns_cache_requests_total{" + cache + R"(,zones="."})") == 10);
  CHECK(at(R"(coredns_forward_requests_total{to="10.0.0.1:53"})") == 4);
  CHECK(at(R"(coredns_forward_requests_total{to="[fd00::1]:5353"})") == 1);
  CHECK(at(R"(coredns_forward_responses_total{rcode="NOERROR",to="10.0.0.1:53"})") == 3);
  CHECK(at(R"(coredns_forward_responses_total{rcode="SERVFAIL",to="10.0.0.1:53"})") == 1);
  CHECK(at(R"(coredns_forward_request_duration_seconds_bucket{to="10.0.0.1:53",le="0.01"})") == 1);
  CHECK(at(R"(coredns_forward_healthcheck_failures_total{to="[fd00::1]:5353"})") == 2);
  CHECK(at("coredns_forward_healthcheck_broken_total") == 6);
  CHECK(at("coredns_forward_max_concurrent_rejects_total") == 8);
  CHECK(at("coredns_panics_total") == 0);
  CHECK(parsed->types.at("coredns_dns_request_duration_seconds") == "histogram");
  CHECK(parsed->types.at("coredns_cache_entries") == "gauge");
  // Ours are all still there.
  CHECK(at(R"(q_total{type="A",rcode="NOERROR"})") == 5);
}

TEST_CASE("A family whose source is absent is left out", "[metrics]") {
  CorednsSources sources = FrontendLike();
  sources.cache_hits.clear();
  sources.upstream_prefix.clear();
  const std::optional<ParsedText> parsed = ParseText(WithCorednsFamilies(OurText(), sources));
  REQUIRE(parsed);
  CHECK(parsed->types.count("coredns_cache_hits_total") == 0);
  CHECK(parsed->types.count("coredns_cache_requests_total") == 0);
  CHECK(parsed->types.count("coredns_forward_requests_total") == 0);
  CHECK(parsed->types.count("coredns_cache_misses_total") == 1);
  // Nothing to derive from at all: only the panics counter.
  CorednsSources none;
  none.server = "dns://:53";
  const std::optional<ParsedText> empty = ParseText(WithCorednsFamilies("", none));
  REQUIRE(empty);
  CHECK(empty->series.size() == 1);
  CHECK(empty->samples.count("coredns_panics_total") == 1);
}

TEST_CASE("Upstream names are written as CoreDNS's `to`", "[metrics]") {
  CHECK(CorednsUpstreamName("10.0.0.1#53") == "10.0.0.1:53");
  CHECK(CorednsUpstreamName("tcp://10.0.0.1#5353") == "10.0.0.1:5353");
  CHECK(CorednsUpstreamName("fd00::1#53") == "[fd00::1]:53");
  CHECK(CorednsUpstreamName("tcp://fd00::1#53") == "[fd00::1]:53");
}

TEST_CASE("--metrics-compat takes none and coredns", "[metrics]") {
  MetricsCompat compat = MetricsCompat::kNone;
  CHECK(ParseMetricsCompat("coredns", &compat));
  CHECK(compat == MetricsCompat::kCoredns);
  CHECK(ParseMetricsCompat("none", &compat));
  CHECK(compat == MetricsCompat::kNone);
  CHECK_FALSE(ParseMetricsCompat("CoreDNS", &compat));
  CHECK_FALSE(ParseMetricsCompat("", &compat));
}

}  // namespace
}  // namespace kdns::metrics

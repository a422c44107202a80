#include "common/metrics/registry.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics/text_parser.h"

namespace kdns::metrics {
namespace {

TEST_CASE("a counter renders as HELP, TYPE and one sample", "[metrics]") {
  Registry registry;
  Counter& hits = registry.AddCounter("kubedns_dnsmasq_hits", "Number of DNS cache hits.");
  hits.Inc(5);
  CHECK(registry.Render() ==
        "# HELP kubedns_dnsmasq_hits Number of DNS cache hits.\n"
        "# TYPE kubedns_dnsmasq_hits counter\n"
        "kubedns_dnsmasq_hits 5\n");
}

TEST_CASE("a gauge renders its current value", "[metrics]") {
  Registry registry;
  Gauge& size = registry.AddGauge("kubedns_dnsmasq_max_size", "Cache size.");
  size.Set(1000);
  size.Dec(0.5);
  CHECK(registry.Render() ==
        "# HELP kubedns_dnsmasq_max_size Cache size.\n"
        "# TYPE kubedns_dnsmasq_max_size gauge\n"
        "kubedns_dnsmasq_max_size 999.5\n");
}

TEST_CASE("a histogram renders cumulative buckets, sum and count", "[metrics]") {
  Registry registry;
  Histogram& latency = registry.AddHistogram("kubedns_probe_kubedns_latency_ms",
                                             "Latency of the DNS probe request kubedns.",
                                             ExponentialBuckets(0.25, 2, 4));
  latency.Observe(0.25);
  latency.Observe(0.75);
  latency.Observe(3);
  CHECK(registry.Render() ==
        "# HELP kubedns_probe_kubedns_latency_ms Latency of the DNS probe request kubedns.\n"
        "# TYPE kubedns_probe_kubedns_latency_ms histogram\n"
        "kubedns_probe_kubedns_latency_ms_bucket{le=\"0.25\"} 1\n"
        "kubedns_probe_kubedns_latency_ms_bucket{le=\"0.5\"} 1\n"
        "kubedns_probe_kubedns_latency_ms_bucket{le=\"1\"} 2\n"
        "kubedns_probe_kubedns_latency_ms_bucket{le=\"2\"} 2\n"
        "kubedns_probe_kubedns_latency_ms_bucket{le=\"+Inf\"} 3\n"
        "kubedns_probe_kubedns_latency_ms_sum 4\n"
        "kubedns_probe_kubedns_latency_ms_count 3\n");
}

TEST_CASE("a histogram collector renders series it does not own, sorted", "[metrics]") {
  Registry registry;
  Histogram b({0.5});
  Histogram a({0.5});
  a.Observe(0.25);
  b.Observe(2);
  registry.AddHistogramCollector("rtt_seconds", "RTT.", {"upstream"},
                                 [&](const Registry::HistogramVisitor& visit) {
                                   visit({"10.0.0.2#53"}, b);
                                   visit({"10.0.0.1#53"}, a);
                                 });
  CHECK(registry.Render() ==
        "# HELP rtt_seconds RTT.\n"
        "# TYPE rtt_seconds histogram\n"
        "rtt_seconds_bucket{upstream=\"10.0.0.1#53\",le=\"0.5\"} 1\n"
        "rtt_seconds_bucket{upstream=\"10.0.0.1#53\",le=\"+Inf\"} 1\n"
        "rtt_seconds_sum{upstream=\"10.0.0.1#53\"} 0.25\n"
        "rtt_seconds_count{upstream=\"10.0.0.1#53\"} 1\n"
        "rtt_seconds_bucket{upstream=\"10.0.0.2#53\",le=\"0.5\"} 0\n"
        "rtt_seconds_bucket{upstream=\"10.0.0.2#53\",le=\"+Inf\"} 1\n"
        "rtt_seconds_sum{upstream=\"10.0.0.2#53\"} 2\n"
        "rtt_seconds_count{upstream=\"10.0.0.2#53\"} 1\n");
}

TEST_CASE("the sidecar's latency buckets are labelled 0.25 to 8192", "[metrics]") {
  Registry registry;
  registry.AddHistogram("lat_ms", "h", ExponentialBuckets(0.25, 2, 16));
  const std::string text = registry.Render();
  for (const char* le : {"0.25", "0.5", "1", "2", "4", "512", "1024", "4096", "8192", "+Inf"}) {
    CAPTURE(le);
    CHECK(text.find("lat_ms_bucket{le=\"" + std::string(le) + "\"} 0\n") != std::string::npos);
  }
}

TEST_CASE("labelled families render series sorted, with le last", "[metrics]") {
  Registry registry;
  CounterFamily& queries =
      registry.AddCounterFamily("kdns_queries_total", "Queries.", {"type", "rcode"});
  queries.WithLabels({"AAAA", "NOERROR"}).Inc(2);
  queries.WithLabels({"A", "NXDOMAIN"}).Inc();
  HistogramFamily& upstream = registry.AddHistogramFamily("kdns_upstream_seconds",
                                                          "Upstream latency.", {"upstream"}, {0.1});
  upstream.WithLabels({"10.0.0.10:53"}).Observe(0.05);
  GaugeFamily& sizes = registry.AddGaugeFamily("kdns_cache_entries", "Entries.", {"kind"});
  sizes.WithLabels({"positive"}).Set(7);
  CHECK(registry.Render() ==
        "# HELP kdns_queries_total Queries.\n"
        "# TYPE kdns_queries_total counter\n"
        "kdns_queries_total{type=\"A\",rcode=\"NXDOMAIN\"} 1\n"
        "kdns_queries_total{type=\"AAAA\",rcode=\"NOERROR\"} 2\n"
        "# HELP kdns_upstream_seconds Upstream latency.\n"
        "# TYPE kdns_upstream_seconds histogram\n"
        "kdns_upstream_seconds_bucket{upstream=\"10.0.0.10:53\",le=\"0.1\"} 1\n"
        "kdns_upstream_seconds_bucket{upstream=\"10.0.0.10:53\",le=\"+Inf\"} 1\n"
        "kdns_upstream_seconds_sum{upstream=\"10.0.0.10:53\"} 0.05\n"
        "kdns_upstream_seconds_count{upstream=\"10.0.0.10:53\"} 1\n"
        "# HELP kdns_cache_entries Entries.\n"
        "# TYPE kdns_cache_entries gauge\n"
        "kdns_cache_entries{kind=\"positive\"} 7\n");
}

TEST_CASE("families render in registration order and empty labelled ones are left out",
          "[metrics]") {
  Registry registry;
  registry.AddGauge("zeta", "Last letter.");
  registry.AddCounterFamily("unused_total", "No series yet.", {"rcode"});
  registry.AddCounter("alpha_total", "First letter.");
  CHECK(registry.Render() ==
        "# HELP zeta Last letter.\n"
        "# TYPE zeta gauge\n"
        "zeta 0\n"
        "# HELP alpha_total First letter.\n"
        "# TYPE alpha_total counter\n"
        "alpha_total 0\n");
}

TEST_CASE("HELP text and label values are escaped", "[metrics]") {
  Registry registry;
  registry.AddCounterFamily("odd_total", "Back\\slash and\nnewline \"kept\".", {"v"})
      .WithLabels({"C:\\dir\n\"quoted\""})
      .Inc();
  const std::string text = registry.Render();
  CHECK(text ==
        "# HELP odd_total Back\\\\slash and\\nnewline \"kept\".\n"
        "# TYPE odd_total counter\n"
        "odd_total{v=\"C:\\\\dir\\n\\\"quoted\\\"\"} 1\n");
  const std::optional<ParsedText> parsed = ParseText(text);
  REQUIRE(parsed);
  CHECK(parsed->helps.at("odd_total") == "Back\\slash and\nnewline \"kept\".");
}

TEST_CASE("callback metrics are read at every render", "[metrics]") {
  Registry registry;
  double cache_size = 150;
  double evictions = 3;
  registry.AddCallbackGauge("kubedns_dnsmasq_max_size", "Size.", [&] { return cache_size; });
  registry.AddCallbackCounter("kubedns_dnsmasq_evictions", "Evictions.", [&] { return evictions; });
  CHECK(registry.Render() ==
        "# HELP kubedns_dnsmasq_max_size Size.\n"
        "# TYPE kubedns_dnsmasq_max_size gauge\n"
        "kubedns_dnsmasq_max_size 150\n"
        "# HELP kubedns_dnsmasq_evictions Evictions.\n"
        "# TYPE kubedns_dnsmasq_evictions counter\n"
        "kubedns_dnsmasq_evictions 3\n");
  cache_size = std::numeric_limits<double>::quiet_NaN();
  evictions = 4;
  const std::optional<ParsedText> parsed = ParseText(registry.Render());
  REQUIRE(parsed);
  CHECK(std::isnan(parsed->samples.at("kubedns_dnsmasq_max_size")));
  CHECK(parsed->samples.at("kubedns_dnsmasq_evictions") == 4);
}

// One series per upstream server, known only at scrape time.
class FakeUpstreams final : public Collector {
 public:
  void Collect(std::vector<Sample>& out) const override {
    for (const auto& [address, sent] : servers) out.push_back({{address, "udp"}, sent});
  }
  std::vector<std::pair<std::string, double>> servers;
};

TEST_CASE("a collector's samples are sorted and get the family's HELP and TYPE", "[metrics]") {
  Registry registry;
  auto upstreams = std::make_shared<FakeUpstreams>();
  upstreams->servers = {{"8.8.8.8#53", 12}, {"1.1.1.1#53", 3}};
  registry.AddCollector("kdns_upstream_queries_total", "Queries sent per upstream.",
                        MetricType::kCounter, {"upstream", "transport"}, upstreams);
  CHECK(registry.Render() ==
        "# HELP kdns_upstream_queries_total Queries sent per upstream.\n"
        "# TYPE kdns_upstream_queries_total counter\n"
        "kdns_upstream_queries_total{upstream=\"1.1.1.1#53\",transport=\"udp\"} 3\n"
        "kdns_upstream_queries_total{upstream=\"8.8.8.8#53\",transport=\"udp\"} 12\n");
  upstreams->servers = {};
  CHECK(registry.Render().empty());
}

TEST_CASE("legacy kube-dns names are kept whole", "[metrics]") {
  Registry registry;
  registry.AddCounter(BuildFqName("skydns", "skydns", "dns_request_count_total"), "Requests.");
  registry.AddCounter(BuildFqName("kubedns", "dnsmasq", "hits"), "Hits.");
  const std::optional<ParsedText> parsed = ParseText(registry.Render());
  REQUIRE(parsed);
  CHECK(parsed->samples.count("skydns_skydns_dns_request_count_total") == 1);
  CHECK(parsed->samples.count("kubedns_dnsmasq_hits") == 1);
  CHECK(parsed->types.at("kubedns_dnsmasq_hits") == "counter");
}

TEST_CASE("rendering while other threads register and increment is safe", "[metrics]") {
  Registry registry;
  Counter& shared = registry.AddCounter("shared_total", "Shared.");
  std::atomic<bool> done{false};
  std::atomic<int> renders{0};
  bool all_parsed = true;  // Written by the scraper only; Catch2 assertions are not thread-safe.
  std::thread scraper([&] {
    while (!done.load()) {
      all_parsed = all_parsed && ParseText(registry.Render()).has_value();
      ++renders;
    }
  });
  std::vector<std::thread> threads;
  threads.reserve(2);
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&registry, &shared, &renders, t] {
      while (renders.load() == 0) std::this_thread::yield();  // Overlap with the scraper.
      CounterFamily& family =
          registry.AddCounterFamily("family_" + std::to_string(t) + "_total", "F.", {"i"});
      for (int i = 0; i < 2000; ++i) {
        shared.Inc();
        family.WithLabelValues({std::to_string(i % 7)}).Inc();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  done = true;
  scraper.join();
  CHECK(all_parsed);
  const std::optional<ParsedText> parsed = ParseText(registry.Render());
  REQUIRE(parsed);
  CHECK(parsed->samples.at("shared_total") == 4000);
  CHECK(parsed->samples.at("family_1_total{i=\"0\"}") == 286);
}

}  // namespace
}  // namespace kdns::metrics

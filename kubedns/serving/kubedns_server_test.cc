#include "kubedns/serving/kubedns_server.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <variant>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/http/http_test_util.h"
#include "common/limits/limits.h"
#include "test/support/fake_dns_server.h"
#include "test/unit/temp_dir.h"

namespace kdns::kubedns {
namespace {

using http::testing::BlockingGet;
using kdns::testing::TempDir;

// Polls `done` for up to 10 s of wall time (the server runs on its own threads).
template <class F>
bool Eventually(F done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// One UDP query; the parsed response.
dns::Message Ask(const loop::SocketAddress& server, const std::string& name) {
  const std::vector<uint8_t> bytes = dns::testing::QuerySpec(name).Id(7).Recursion(false).Bytes();
  int fd = socket(server.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  REQUIRE(sendto(fd, bytes.data(), bytes.size(), 0, server.sockaddr_ptr(), server.sockaddr_len()) ==
          static_cast<ssize_t>(bytes.size()));
  std::vector<uint8_t> reply(4096);
  ssize_t n = recv(fd, reply.data(), reply.size(), 0);
  close(fd);
  REQUIRE(n > 0);
  reply.resize(static_cast<size_t>(n));
  return dns::testing::Parse(reply);
}

KubednsServer::Options Options(const std::string& objects_file) {
  KubednsServer::Options options;
  options.answer.zone = *dns::Name::FromText("cluster.local.");
  options.dns_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.dns_threads = 2;
  options.healthz_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.metrics_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  options.objects_file = objects_file;
  options.objects_poll_ms = 50;
  return options;
}

void Copy(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to + ".tmp", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(to + ".tmp", to);  // atomically, as kubectl or a ConfigMap would
}

void WriteFile(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path + ".tmp");
    out << text;
  }
  std::filesystem::rename(path + ".tmp", path);
}

}  // namespace

TEST_CASE("kubedns forwards with the routes of its config dir and follows their changes",
          "[kubedns][server]") {
  // The upstream runs on its own thread, as the server under test does.
  kdns::testing::FakeDnsServerThread upstream(
      kdns::testing::AnswerA(kdns::testing::A("192.0.2.77")));
  TempDir dir;
  const std::string config = dir.File("config");
  std::filesystem::create_directory(config);
  WriteFile(dir.File("resolv.conf"), "# no nameserver\n");
  KubednsServer::Options options = Options("test/conformance/objects.json");
  options.config_dir = config;
  options.config_period_ms = 20;
  options.resolv_conf = dir.File("resolv.conf");
  KubednsServer server(options);
  std::string error;
  REQUIRE(server.Start(&error));
  REQUIRE(Eventually([&] { return server.ready(); }));

  // No upstream anywhere: SERVFAIL, as skydns.
  CHECK(Ask(server.dns_address(), "www.example.com.").rcode() == dns::Rcode::kServFail);

  const std::string upstream_text = upstream.address().ToString();
  WriteFile(config + "/upstreamNameservers", "[\"" + upstream_text + "\"]");
  REQUIRE(Eventually([&] {
    dns::Message reply = Ask(server.dns_address(), "www.example.com.");
    return reply.rcode() == dns::Rcode::kNoError && reply.answers.size() == 1;
  }));
  CHECK(upstream.CountQueries() >= 1);

  // A stub server named by a cluster name is resolved through kubedns itself.
  WriteFile(config + "/stubDomains",
            R"({"acme.local": ["kubernetes.default.svc.cluster.local", "10.0.0.9:5353"]})");
  REQUIRE(Eventually([&] { return !server.routes()->stubs().empty(); }));
  REQUIRE(Eventually([&] {
    return server.routes()->stubs()[0].upstreams.ToString() == "10.96.0.1#53,10.0.0.9#5353";
  }));

  // An invalid change is rejected; forwarding goes on with the previous configuration.
  WriteFile(config + "/upstreamNameservers", R"(["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"])");
  REQUIRE(Eventually([&] {
    return BlockingGet(server.metrics_address(), "/metrics")
               .find("kdns_kubedns_forward_config_reloads_total{result=\"rejected\"} 1") !=
           std::string::npos;
  }));
  CHECK(Ask(server.dns_address(), "www2.example.com.").rcode() == dns::Rcode::kNoError);
  CHECK(server.routes()->default_route().upstreams.ToString() ==
        upstream::FormatUpstreamAddress(upstream.address()));
  server.Stop();
}

TEST_CASE("kubedns --autopath walks the node's domains of its resolv.conf, or those it is given",
          "[kubedns][server][autopath]") {
  // Every name exists upstream: the first candidate asked upstream wins.
  kdns::testing::FakeDnsServerThread upstream(
      kdns::testing::AnswerA(kdns::testing::A("192.0.2.77")));
  TempDir dir;
  // A pod's resolv.conf, as a kubedns with the wrong dnsPolicy would see: the cluster's
  // domains are dropped from the walk, node.example stays.
  WriteFile(dir.File("resolv.conf"),
            "search default.svc.cluster.local svc.cluster.local cluster.local node.example\n");
  auto winner = [&](std::optional<std::vector<dns::Name>> search) {
    KubednsServer::Options options = Options("test/conformance/objects.json");
    options.resolv_conf = dir.File("resolv.conf");
    options.nameservers = {upstream.address()};
    options.autopath = true;
    options.autopath_search = std::move(search);
    KubednsServer server(options);
    std::string error;
    REQUIRE(server.Start(&error));
    REQUIRE(Eventually([&] { return server.ready(); }));
    dns::Message reply = Ask(server.dns_address(), "www.example.com.default.svc.cluster.local.");
    server.Stop();
    REQUIRE(reply.answers.size() == 2);
    const auto* cname = std::get_if<dns::RdataCname>(&reply.answers[0].rdata);
    REQUIRE(cname != nullptr);
    return cname->target.ToText();
  };
  CHECK(winner(std::nullopt) == "www.example.com.node.example.");
  CHECK(winner(std::vector<dns::Name>{*dns::Name::FromText("corp.example.")}) ==
        "www.example.com.corp.example.");
  CHECK(winner(std::vector<dns::Name>{}) == "www.example.com.");
}

TEST_CASE("kubedns serves the objects file and reports ready", "[kubedns][server]") {
  KubednsServer::Options options = Options("test/conformance/objects.json");
  options.debug_address = *loop::SocketAddress::Parse("127.0.0.1:0");
  KubednsServer server(options);
  std::string error;
  REQUIRE(server.Start(&error));
  CHECK(Eventually([&] { return server.ready(); }));
  CHECK(BlockingGet(server.healthz_address(), "/readiness") == "200 ok");
  CHECK(BlockingGet(server.healthz_address(), "/healthz") == "200 ok");
  dns::Message answer = Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.");
  CHECK(answer.rcode() == dns::Rcode::kNoError);
  REQUIRE(answer.answers.size() == 1);
  std::string metrics = BlockingGet(server.metrics_address(), "/metrics");
  CHECK(metrics.rfind("200 ", 0) == 0);
  CHECK(metrics.find("skydns_skydns_dns_request_count_total{system=\"auth\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("kdns_kubedns_services 12") != std::string::npos);
  CHECK(metrics.find("kdns_objects_file_reloads_total") != std::string::npos);
  std::string cache = BlockingGet(server.debug_address(), "/cache");
  CHECK(cache.find("\"name\":\"kubernetes\"") != std::string::npos);
  CHECK(BlockingGet(server.debug_address(), "/debug/top-clients").rfind("200 {", 0) == 0);
  // The debug data is on its own port only: not where every pod scrapes metrics.
  CHECK(BlockingGet(server.metrics_address(), "/cache").rfind("404", 0) == 0);
  CHECK(BlockingGet(server.metrics_address(), "/debug/top-clients").rfind("404", 0) == 0);
  CHECK(BlockingGet(server.debug_address(), "/metrics").rfind("404", 0) == 0);
  CHECK(BlockingGet(server.metrics_address(), "/nope").rfind("404", 0) == 0);

  server.StartLameduck();
  CHECK(BlockingGet(server.healthz_address(), "/readiness").rfind("503", 0) == 0);
  // Still answering during lameduck.
  CHECK(Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kNoError);
  server.Stop();
}

TEST_CASE("kubedns serves no debug data unless asked to", "[kubedns][server]") {
  KubednsServer::Options options = Options("test/conformance/objects.json");
  // Options() binds both to 127.0.0.1:0, which is one port (one HTTP thread).
  SECTION("metrics and healthz on one port") {}
  SECTION("metrics and healthz on two ports") {
    options.metrics_address = *loop::SocketAddress::Parse("127.0.0.2:0");
  }
  KubednsServer server(options);
  std::string error;
  REQUIRE(server.Start(&error));
  REQUIRE(Eventually([&] { return server.ready(); }));
  CHECK(server.debug_address().family() == AF_UNSPEC);
  const uint64_t before = limits::LimitHits(limits::Limit::kDebugOnPublishedPort);
  for (const auto& port : {server.metrics_address(), server.healthz_address()}) {
    for (const char* path : {"/cache", "/debug/top-clients"}) {
      INFO(port.ToString() << path);
      CHECK(BlockingGet(port, path).rfind("404", 0) == 0);
    }
  }
  CHECK(limits::LimitHits(limits::Limit::kDebugOnPublishedPort) == before + 4);
  server.Stop();
}

TEST_CASE("kubedns answers SERVFAIL and is not ready until its source has loaded",
          "[kubedns][server]") {
  TempDir dir;
  std::string file = dir.File("objects.json");
  KubednsServer server(Options(file));
  std::string error;
  REQUIRE(server.Start(&error));
  CHECK_FALSE(server.ready());
  CHECK(BlockingGet(server.healthz_address(), "/readiness").rfind("503", 0) == 0);
  CHECK(Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kServFail);
  CHECK(BlockingGet(server.healthz_address(), "/healthz") == "200 ok");  // liveness is independent

  Copy("test/conformance/objects.json", file);
  REQUIRE(Eventually([&] { return server.ready(); }));
  CHECK(Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kNoError);
}

TEST_CASE("kubedns picks up a changed objects file and keeps the last good one",
          "[kubedns][server]") {
  TempDir dir;
  std::string file = dir.File("objects.json");
  Copy("test/conformance/objects.json", file);
  KubednsServer server(Options(file));
  std::string error;
  REQUIRE(server.Start(&error));
  REQUIRE(Eventually([&] { return server.ready(); }));
  CHECK(Ask(server.dns_address(), "demo.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kNxDomain);

  {
    std::ofstream out(file + ".new");
    out << R"({"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service",
      "metadata":{"name":"demo","namespace":"default"},"spec":{"clusterIP":"10.96.7.7"}}]})";
  }
  std::filesystem::rename(file + ".new", file);
  REQUIRE(Eventually([&] {
    return Ask(server.dns_address(), "demo.default.svc.cluster.local.").rcode() ==
           dns::Rcode::kNoError;
  }));
  // Services missing from the new file are gone.
  CHECK(Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kNxDomain);

  uint64_t generation = server.snapshot()->generation();
  {
    std::ofstream out(file + ".new");
    out << "{ not json";
  }
  std::filesystem::rename(file + ".new", file);
  REQUIRE(Eventually([&] {
    return BlockingGet(server.metrics_address(), "/metrics")
               .find("kdns_objects_file_reloads_total{result=\"error\"} 1") != std::string::npos;
  }));
  CHECK(server.snapshot()->generation() == generation);
  CHECK(Ask(server.dns_address(), "demo.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kNoError);
  CHECK(server.ready());
}

// `count` ClusterIP services in 10 namespaces, each with one slice of 15 ready endpoints;
// `shift` moves every cluster IP and endpoint address (a reload that changes every object).
std::string ShiftedCluster(int count, int shift) {
  auto ip = [](int a, int n) {
    return std::to_string(a) + "." + std::to_string((n >> 16) & 255) + "." +
           std::to_string((n >> 8) & 255) + "." + std::to_string(n & 255);
  };
  std::string text = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (int i = 0; i < count; ++i) {
    const std::string ns = "ns-" + std::to_string(i % 10);
    const std::string name = "svc-" + std::to_string(i);
    text += (i == 0 ? "" : ",");
    text += R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")";
    text += name;
    text += R"(","namespace":")";
    text += ns;
    text += R"("},"spec":{"clusterIP":")";
    text += ip(10, (96 << 16) + i + shift * 10000);
    text += R"("}},)";
    text += R"({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":")";
    text += name;
    text += R"(-a","namespace":")";
    text += ns;
    text += R"(","labels":{"kubernetes.io/service-name":")";
    text += name;
    text += R"("}},"addressType":"IPv4","endpoints":[)";
    for (int j = 0; j < 15; ++j) {
      text += (j == 0 ? "" : ",");
      text += R"({"addresses":[")";
      text += ip(10, (128 << 16) + i * 15 + j + shift * 100000);
      text += R"("],"conditions":{"ready":true}})";
    }
    text += "]}";
  }
  return text + "]}";
}

TEST_CASE(
    "kubedns publishes a reload that changes everything on the way, and idle threads "
    "let the old records go",
    "[kubedns][server]") {
  TempDir dir;
  std::string file = dir.File("objects.json");
  // About 2 MiB of records: more than one RecordTreeWriter::kListPublishBytes.
  WriteFile(file, ShiftedCluster(2000, 0));
  KubednsServer server(Options(file));
  std::string error;
  REQUIRE(server.Start(&error));
  REQUIRE(Eventually([&] { return server.ready(); }));
  // Enough queries that every DNS thread answers and holds the snapshot.
  for (int i = 0; i < 20; ++i) {
    REQUIRE(Ask(server.dns_address(), "svc-1.ns-1.svc.cluster.local.").rcode() ==
            dns::Rcode::kNoError);
  }
  std::weak_ptr<const Snapshot> before = server.snapshot();
  const uint64_t generation = server.snapshot()->generation();

  WriteFile(file, ShiftedCluster(2000, 1));
  REQUIRE(Eventually([&] {
    return BlockingGet(server.metrics_address(), "/metrics")
               .find("kdns_objects_file_reloads_total{result=\"ok\"} 2") != std::string::npos;
  }));
  // Published along the way, not only at the end.
  CHECK(server.snapshot()->generation() > generation + 1);
  // No query came since: the idle threads let go of the old snapshot themselves.
  CHECK(Eventually([&] { return before.expired(); }));
  const dns::Message reply = Ask(server.dns_address(), "svc-1.ns-1.svc.cluster.local.");
  REQUIRE(reply.answers.size() == 1);
  const auto* a = std::get_if<dns::RdataA>(&reply.answers[0].rdata);
  REQUIRE(a != nullptr);
  CHECK(a->address == *IpAddress::Parse("10.96.39.17"));  // 10.96.0.1 moved by 10000
}

TEST_CASE("kubedns reports a port in use as a start-up error", "[kubedns][server]") {
  KubednsServer first(Options("test/conformance/objects.json"));
  std::string error;
  REQUIRE(first.Start(&error));
  KubednsServer::Options options = Options("test/conformance/objects.json");
  options.healthz_address = first.healthz_address();
  KubednsServer second(options);
  CHECK_FALSE(second.Start(&error));
  CHECK(error.find("healthz on") != std::string::npos);
}

}  // namespace kdns::kubedns

#include "kubedns/kubedns_server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "test/unit/temp_dir.h"

namespace kdns::kubedns {
namespace {

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

// One UDP query; the parsed response (rcode kServFail with no questions on timeout).
dns::Message Ask(const loop::SocketAddress& server, const std::string& name) {
  std::vector<uint8_t> query(512);
  dns::MessageBuilder builder(query);
  builder.header().id = 7;
  REQUIRE(builder.AddQuestion(*dns::Name::FromText(name), dns::RrType::kA, dns::RrClass::kIn) ==
          dns::BuildError::kOk);
  auto bytes = builder.Finish();
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
  dns::Message message;
  REQUIRE(dns::ParseMessage(reply, &message) == dns::ParseError::kOk);
  return message;
}

// GET over a plain socket: "<status> <body>".
std::string Get(const loop::SocketAddress& server, const std::string& path) {
  int fd = socket(server.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  REQUIRE(connect(fd, server.sockaddr_ptr(), server.sockaddr_len()) == 0);
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
  close(fd);
  auto body = response.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  return response.substr(9, 3) + " " + response.substr(body + 4);
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

}  // namespace

TEST_CASE("kubedns serves the objects file and reports ready", "[kubedns][server]") {
  KubednsServer server(Options("test/conformance/objects.json"));
  std::string error;
  REQUIRE(server.Start(&error));
  CHECK(Eventually([&] { return server.ready(); }));
  CHECK(Get(server.healthz_address(), "/readiness") == "200 ok");
  CHECK(Get(server.healthz_address(), "/healthz") == "200 ok");
  dns::Message answer = Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.");
  CHECK(answer.rcode() == dns::Rcode::kNoError);
  REQUIRE(answer.answers.size() == 1);
  std::string metrics = Get(server.metrics_address(), "/metrics");
  CHECK(metrics.rfind("200 ", 0) == 0);
  CHECK(metrics.find("skydns_skydns_dns_request_count_total{system=\"auth\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("kdns_kubedns_services 12") != std::string::npos);
  CHECK(metrics.find("kdns_objects_file_reloads_total") != std::string::npos);
  std::string cache = Get(server.metrics_address(), "/cache");
  CHECK(cache.find("\"name\":\"kubernetes\"") != std::string::npos);
  CHECK(Get(server.metrics_address(), "/nope").rfind("404", 0) == 0);

  server.StartLameduck();
  CHECK(Get(server.healthz_address(), "/readiness").rfind("503", 0) == 0);
  // Still answering during lameduck.
  CHECK(Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kNoError);
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
  CHECK(Get(server.healthz_address(), "/readiness").rfind("503", 0) == 0);
  CHECK(Ask(server.dns_address(), "kubernetes.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kServFail);
  CHECK(Get(server.healthz_address(), "/healthz") == "200 ok");  // liveness is independent

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
    return Get(server.metrics_address(), "/metrics")
               .find("kdns_objects_file_reloads_total{result=\"error\"} 1") != std::string::npos;
  }));
  CHECK(server.snapshot()->generation() == generation);
  CHECK(Ask(server.dns_address(), "demo.default.svc.cluster.local.").rcode() ==
        dns::Rcode::kNoError);
  CHECK(server.ready());
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

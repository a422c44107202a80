// CurlTransport against a real local HTTP(S) server: test/fixtures/curl_test_server.py (Python
// stdlib, so HTTP/1.1 only; the HTTP/2 path is not exercised here). A throwaway CA, server
// and client certificates are made with the openssl CLI once per test run.
#include "common/k8s/curl_transport.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "common/k8s/api_config.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "test/unit/temp_dir.h"

extern char** environ;

namespace kdns::k8s {
namespace {

using kdns::testing::TempDir;

using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;

constexpr int kWaitMs = 10'000;

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  REQUIRE(out.good());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ca.crt (signs server.crt and client.crt), other-ca.crt (signs nothing we use).
class Certificates {
 public:
  Certificates() {
    const std::string cd = "cd " + dir_.path() + " && ";
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string ca_ext =
        " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign";
    Run(cd + "openssl req -x509" + ec + " -keyout ca.key -out ca.crt -days 2" +
        " -subj /CN=kdns-test-ca" + ca_ext);
    Run(cd + "openssl req -x509" + ec + " -keyout other-ca.key -out other-ca.crt -days 2" +
        " -subj /CN=kdns-other-ca" + ca_ext);
    WriteFile(dir_.File("server.ext"),
              "subjectAltName=IP:127.0.0.1,DNS:kubernetes.default.svc\n"
              "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n");
    WriteFile(dir_.File("client.ext"), "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n");
    auto issue = [&](const std::string& name) {  // name.key, name.crt signed by the CA
      Run(cd + "openssl req -new" + ec + " -keyout " + name + ".key -out " + name +
          ".csr -subj /CN=kdns-test-" + name);
      Run(cd + "openssl x509 -req -in " + name + ".csr -CA ca.crt -CAkey ca.key" +
          " -CAcreateserial -days 2 -out " + name + ".crt -extfile " + name + ".ext");
    };
    issue("server");
    issue("client");
  }
  std::string File(const std::string& name) const { return dir_.File(name); }
  const std::string& dir() const { return dir_.path(); }

 private:
  static void Run(const std::string& command) {
    INFO(command);
    REQUIRE(std::system((command + " 2>/dev/null >/dev/null").c_str()) == 0);
  }
  TempDir dir_;
};

const Certificates& Certs() {
  static const Certificates certs;
  return certs;
}

// The Python server as a child process; it exits when its stdin (our pipe) closes.
class TestServer {
 public:
  explicit TestServer(bool tls) {
    int to_child[2];
    int from_child[2];
    REQUIRE(pipe2(to_child, O_CLOEXEC) == 0);
    REQUIRE(pipe2(from_child, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    std::vector<std::string> args = {"/usr/bin/python3", "test/fixtures/curl_test_server.py"};
    if (tls) {
      args.push_back("--tls");
      args.push_back(Certs().dir());
    }
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int spawned = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    stdin_ = to_child[1];
    REQUIRE(spawned == 0);

    // Wait (bounded) for "PORT <n>\n".
    std::string line;
    while (line.find('\n') == std::string::npos) {
      pollfd pfd{from_child[0], POLLIN, 0};
      REQUIRE(poll(&pfd, 1, kWaitMs) == 1);
      char buf[64];
      ssize_t n = read(from_child[0], buf, sizeof(buf));
      REQUIRE(n > 0);
      line.append(buf, static_cast<size_t>(n));
    }
    close(from_child[0]);
    REQUIRE(line.rfind("PORT ", 0) == 0);
    port_ = std::stoi(line.substr(5));
  }
  ~TestServer() {
    close(stdin_);
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int port_ = 0;
};

const TestServer& TlsServer() {
  static const TestServer server(/*tls=*/true);
  return server;
}

const TestServer& PlainServer() {
  static const TestServer server(/*tls=*/false);
  return server;
}

ApiConfig TlsConfig() {
  ApiConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(TlsServer().port());
  config.ca_file = Certs().File("ca.crt");
  return config;
}

CurlTransport::Options TestOptions() {
  CurlTransport::Options options;
  options.use_environment_proxy = false;  // the servers are local whatever the environment says
  return options;
}

// The "peer-port" field of a /headers body: the client's port, to see connection reuse.
std::string PeerPort(const std::string& headers_body) {
  size_t at = headers_body.find("\"peer-port\"");
  return at == std::string::npos ? "" : headers_body.substr(at, headers_body.find(',', at) - at);
}

// Everything one request delivered. `inside_call` is set around Get()/Cancel() so that a
// callback running from inside them is noticed.
bool inside_call = false;

struct Collected {
  std::optional<ApiResponseHead> head;
  int heads = 0;
  std::vector<std::string> pieces;
  std::string body;
  std::optional<ApiResult> done;
  int dones = 0;
  bool body_before_head = false;
  bool called_from_inside = false;
  int callbacks() const { return heads + static_cast<int>(pieces.size()) + dones; }
};

ApiTransport::Callbacks Collect(Collected& c) {
  return {
      .on_head =
          [&c](const ApiResponseHead& head) {
            c.called_from_inside |= inside_call;
            c.head = head;
            ++c.heads;
          },
      .on_body =
          [&c](std::string_view piece) {
            c.called_from_inside |= inside_call;
            if (!c.head) c.body_before_head = true;
            c.pieces.emplace_back(piece);
            c.body += piece;
          },
      .on_done =
          [&c](const ApiResult& result) {
            c.called_from_inside |= inside_call;
            c.done = result;
            ++c.dones;
          },
  };
}

ApiTransport::RequestId Get(ApiTransport& transport, const std::string& path, Collected& c,
                            uint64_t timeout_ms = kWaitMs) {
  inside_call = true;
  auto id = transport.Get(path, Collect(c), timeout_ms);
  inside_call = false;
  return id;
}

// Runs until the request is done; checks the invariants every request keeps.
void Finish(loop::Loop& loop, Collected& c) {
  REQUIRE(RunUntil(
      loop, [&] { return c.done.has_value(); }, kWaitMs));
  CHECK(c.dones == 1);
  CHECK(c.heads <= 1);
  CHECK_FALSE(c.body_before_head);
  CHECK_FALSE(c.called_from_inside);
}

TEST_CASE("A JSON body arrives over HTTPS after its head, and the request completes", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, "/json", c);
    CHECK(c.callbacks() == 0);  // nothing from inside Get()
    Finish(loop, c);
    REQUIRE(c.done->ok());
    CHECK(c.done->status == 200);
    REQUIRE(c.head);
    CHECK(c.head->status == 200);
    CHECK(c.head->http_version == "1.1");
    CHECK(c.head->content_type == "application/json");
    CHECK_FALSE(c.head->retry_after_s);
    CHECK(c.body == "{\"kind\":\"ServiceList\",\"items\":[]}\n");
    CHECK(transport.active_requests() == 0);
    auto stats = transport.stats();
    CHECK(stats.requests_started == 1);
    CHECK(stats.requests_failed == 0);
    CHECK(stats.bytes_received == c.body.size());
  }
  RequireClosesClean(loop);
}

TEST_CASE("A large body arrives in pieces and complete", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, "/big?bytes=300000", c);
    Finish(loop, c);
    CHECK(c.done->ok());
    CHECK(c.body.size() == 300000);
    CHECK(c.pieces.size() > 1);
    CHECK(c.body.substr(0, 8) == "{\"n\":\"01");
  }
  RequireClosesClean(loop);
}

TEST_CASE("A watch stream's lines arrive before the response ends", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    auto id = Get(transport, "/watch?lines=2&hold=1", c, /*timeout_ms=*/0);
    REQUIRE(RunUntil(
        loop, [&] { return std::count(c.body.begin(), c.body.end(), '\n') == 2; }, kWaitMs));
    CHECK(c.body ==
          "{\"type\":\"ADDED\",\"object\":{\"n\":0}}\n{\"type\":\"ADDED\",\"object\":{\"n\":1}}\n");
    CHECK_FALSE(c.done);  // the server holds the stream open
    CHECK(c.head->status == 200);

    int before = c.callbacks();
    inside_call = true;
    transport.Cancel(id);
    transport.Cancel(id);  // twice: ignored
    inside_call = false;
    CHECK(transport.active_requests() == 0);
    for (int i = 0; i < 10; ++i) loop.RunNoWait();
    CHECK(c.callbacks() == before);
    CHECK(transport.stats().requests_cancelled == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A chunked stream delivers every chunk and ends cleanly", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, "/watch?lines=4&interval_ms=20", c, /*timeout_ms=*/0);
    Finish(loop, c);
    CHECK(c.done->ok());
    CHECK(c.body.find("{\"n\":3}") != std::string::npos);
    CHECK(c.pieces.size() >= 2);  // 20 ms apart: not one read
  }
  RequireClosesClean(loop);
}

TEST_CASE("Status, Retry-After and content type reach on_head", "[curl]") {
  auto [path, status, retry_after] = GENERATE(table<std::string, int, std::optional<uint32_t>>({
      {"/status/401", 401, std::nullopt},
      {"/status/410", 410, std::nullopt},
      {"/status/429", 429, 7},
      {"/status/500", 500, std::nullopt},
      {"/status/503", 503, 7},
      {"/status/404", 404, std::nullopt},
  }));
  INFO(path);
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, path, c);
    Finish(loop, c);
    CHECK(c.done->ok());  // an HTTP error status is not a transport error
    CHECK(c.done->status == status);
    REQUIRE(c.head);
    CHECK(c.head->status == status);
    CHECK(c.head->content_type == "application/json");
    CHECK(c.head->retry_after_s == retry_after);
    CHECK(c.body.find("\"kind\": \"Status\"") != std::string::npos);
    CHECK(transport.stats().requests_failed == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A Retry-After given as an HTTP date becomes seconds from now", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, "/retry-date", c);
    Finish(loop, c);
    REQUIRE(c.head->retry_after_s);
    CHECK(*c.head->retry_after_s >= 50);
    CHECK(*c.head->retry_after_s <= 61);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A server certificate from another CA fails with a TLS error", "[curl]") {
  loop::Loop loop;
  {
    ApiConfig config = TlsConfig();
    SECTION("another CA file") { config.ca_file = Certs().File("other-ca.crt"); }
    SECTION("the system CAs") { config.ca_file.clear(); }
    SECTION("another CA as PEM data") {
      config.ca_file.clear();
      config.ca_pem = ReadFile(Certs().File("other-ca.crt"));
    }
    CurlTransport transport(loop, config, TestOptions());
    Collected c;
    Get(transport, "/json", c);
    Finish(loop, c);
    CHECK_FALSE(c.done->ok());
    CHECK(c.done->status == 0);
    CHECK_FALSE(c.head);
    INFO(c.done->transport_error);
    CHECK(c.done->transport_error.rfind("TLS: ", 0) == 0);
    CHECK(c.done->transport_error.find("certificate") != std::string::npos);
    CHECK(c.done->transport_error.find('\n') == std::string::npos);
    CHECK(transport.stats().requests_failed == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("insecure_skip_tls_verify accepts an unknown certificate", "[curl]") {
  loop::Loop loop;
  {
    ApiConfig config = TlsConfig();
    config.ca_file.clear();
    config.insecure_skip_tls_verify = true;
    CurlTransport transport(loop, config, TestOptions());
    Collected c;
    Get(transport, "/json", c);
    Finish(loop, c);
    CHECK(c.done->ok());
    CHECK(c.done->status == 200);
  }
  RequireClosesClean(loop);
}

TEST_CASE("The CA and a client certificate may be files or PEM data", "[curl]") {
  loop::Loop loop;
  {
    ApiConfig config = TlsConfig();
    std::string expected_cn = "kdns-test-client";
    SECTION("files") {
      config.client_cert_file = Certs().File("client.crt");
      config.client_key_file = Certs().File("client.key");
    }
    SECTION("PEM data") {
      config.ca_file.clear();
      config.ca_pem = ReadFile(Certs().File("ca.crt"));
      config.client_cert_pem = ReadFile(Certs().File("client.crt"));
      config.client_key_pem = ReadFile(Certs().File("client.key"));
    }
    SECTION("no client certificate") { expected_cn = ""; }
    CurlTransport transport(loop, config, TestOptions());
    Collected c;
    Get(transport, "/headers", c);
    Finish(loop, c);
    INFO(c.done->transport_error);
    REQUIRE(c.done->ok());
    CHECK(c.body.find("\"client-cn\": \"" + expected_cn + "\"") != std::string::npos);
  }
  RequireClosesClean(loop);
}

TEST_CASE("tls_server_name is the name the certificate is checked against", "[curl]") {
  loop::Loop loop;
  {
    ApiConfig config = TlsConfig();
    auto [name, ok] = GENERATE(table<std::string, bool>({
        {"kubernetes.default.svc", true},  // in the certificate; not resolvable
        {"wrong.example", false},
    }));
    INFO(name);
    config.tls_server_name = name;
    CurlTransport transport(loop, config, TestOptions());
    Collected c;
    Get(transport, "/json", c);
    Finish(loop, c);
    INFO(c.done->transport_error);
    CHECK(c.done->ok() == ok);
    if (!ok) CHECK(c.done->transport_error.rfind("TLS: ", 0) == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Requests carry Accept, User-Agent, the bearer token and accept gzip", "[curl]") {
  loop::Loop loop;
  {
    ApiConfig config = TlsConfig();
    config.token = "secret-token";
    CurlTransport transport(loop, config, TestOptions());
    Collected c;
    Get(transport, "/headers", c);
    Finish(loop, c);
    REQUIRE(c.done->ok());
    CHECK(c.body.find("\"accept\": \"application/json\"") != std::string::npos);
    CHECK(c.body.find("\"authorization\": \"Bearer secret-token\"") != std::string::npos);
    CHECK(c.body.find("\"user-agent\": \"kdns/") != std::string::npos);
    CHECK(c.body.find("gzip") != std::string::npos);

    Collected gz;
    Get(transport, "/gzip", gz);
    Finish(loop, gz);
    CHECK(gz.done->status == 200);
    CHECK(gz.body == "{\"compressed\":true}\n");
  }
  RequireClosesClean(loop);
}

TEST_CASE("Without a token no Authorization header is sent", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, "/headers", c);
    Finish(loop, c);
    CHECK(c.body.find("authorization") == std::string::npos);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A 401 makes the next request re-read the token file", "[curl]") {
  TempDir dir;
  std::string token_file = dir.File("token");
  WriteFile(token_file, "old-token\n");
  ManualClock clock(1000);
  loop::Loop loop;
  {
    ApiConfig config = TlsConfig();
    config.token_file = token_file;
    CurlTransport::Options options = TestOptions();
    options.clock = &clock;
    CurlTransport transport(loop, config, options);

    Collected first;
    Get(transport, "/protected/new-token", first);
    Finish(loop, first);
    CHECK(first.done->status == 401);
    CHECK(first.body.find("Bearer old-token") != std::string::npos);

    // Rotated; the clock has not moved, so only the 401 makes the transport look again.
    WriteFile(token_file, "new-token\n");
    Collected second;
    Get(transport, "/protected/new-token", second);
    Finish(loop, second);
    CHECK(second.done->status == 200);
    CHECK(second.body.find("Bearer new-token") != std::string::npos);

    // Unreadable now: the last good token stays.
    std::filesystem::remove(token_file);
    Collected third;
    Get(transport, "/protected/new-token", third);
    Finish(loop, third);
    CHECK(third.done->status == 200);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Cancel from inside on_body stops the stream with no further callbacks", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    ApiTransport::RequestId id = 0;
    auto callbacks = Collect(c);
    auto on_body = callbacks.on_body;
    callbacks.on_body = [&, on_body](std::string_view piece) {
      on_body(piece);
      transport.Cancel(id);
      transport.Cancel(id);
    };
    id = transport.Get("/watch?lines=50&interval_ms=5", std::move(callbacks), 0);
    REQUIRE(RunUntil(
        loop, [&] { return transport.active_requests() == 0; }, kWaitMs));
    CHECK(c.pieces.size() == 1);
    CHECK(c.dones == 0);
    // The transport is still usable, on the same or a new connection.
    Collected after;
    Get(transport, "/json", after);
    Finish(loop, after);
    CHECK(after.done->ok());
    CHECK(c.pieces.size() == 1);
    CHECK(c.dones == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("Callbacks may start and cancel other requests", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected watch, from_head, from_done;
    auto watch_id = Get(transport, "/watch?lines=1&hold=1", watch, 0);

    Collected first;
    auto callbacks = Collect(first);
    auto on_head = callbacks.on_head;
    callbacks.on_head = [&, on_head](const ApiResponseHead& head) {
      on_head(head);
      transport.Get("/json", Collect(from_head), kWaitMs);  // from inside curl: deferred
    };
    auto on_done = callbacks.on_done;
    callbacks.on_done = [&, on_done](const ApiResult& result) {
      on_done(result);
      transport.Cancel(watch_id);
      transport.Get("/status/410", Collect(from_done), kWaitMs);
    };
    transport.Get("/json", std::move(callbacks), kWaitMs);

    REQUIRE(RunUntil(
        loop, [&] { return from_head.done && from_done.done; }, kWaitMs));
    CHECK(first.done->ok());
    CHECK(from_head.done->status == 200);
    CHECK(from_done.done->status == 410);
    CHECK(watch.dones == 0);
    CHECK(transport.active_requests() == 0);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A connection dropped mid-body is a transport error", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, "/drop", c);
    Finish(loop, c);
    INFO(c.done->transport_error);
    CHECK_FALSE(c.done->ok());
    CHECK(c.done->status == 200);
    CHECK(c.head->status == 200);
    CHECK(c.done->transport_error.rfind("connection closed mid-body: ", 0) == 0);
    CHECK(transport.stats().requests_failed == 1);
  }
  RequireClosesClean(loop);
}

TEST_CASE("timeout_ms ends a request that takes too long", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Collected c;
    Get(transport, "/slow?delay_ms=5000", c, /*timeout_ms=*/300);
    Finish(loop, c);
    INFO(c.done->transport_error);
    CHECK_FALSE(c.done->ok());
    CHECK(c.done->transport_error.rfind("timed out after 300 ms", 0) == 0);
    CHECK_FALSE(c.head);
  }
  RequireClosesClean(loop);
}

TEST_CASE("A refused connection is reported as a connect error", "[curl]") {
  // A bound socket that does not listen: connecting to it is refused, and no one else can
  // take the port while the test runs.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  socklen_t length = sizeof(address);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  loop::Loop loop;
  {
    auto config = FromMasterUrl("http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)));
    REQUIRE(config.ok());
    CurlTransport transport(loop, config.value(), TestOptions());
    Collected c;
    Get(transport, "/api", c);
    Finish(loop, c);
    INFO(c.done->transport_error);
    CHECK(c.done->transport_error.rfind("connect: ", 0) == 0);
    CHECK(c.done->transport_error.find("refused") != std::string::npos);
  }
  close(fd);
  RequireClosesClean(loop);
}

TEST_CASE("Plain http:// from --kube-master-url works and reuses its connection", "[curl]") {
  loop::Loop loop;
  {
    auto config = FromMasterUrl("http://127.0.0.1:" + std::to_string(PlainServer().port()) + "/");
    REQUIRE(config.ok());
    CurlTransport transport(loop, config.value(), TestOptions());
    Collected first, second;
    Get(transport, "/headers", first);
    Finish(loop, first);
    Get(transport, "/headers", second);
    Finish(loop, second);
    REQUIRE(first.done->ok());
    CHECK(first.head->http_version == "1.1");
    CHECK_FALSE(PeerPort(first.body).empty());
    CHECK(PeerPort(first.body) == PeerPort(second.body));  // keep-alive
  }
  RequireClosesClean(loop);
}

TEST_CASE("max_connections queues requests on the connections it allows", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport::Options options = TestOptions();
    options.max_connections = 1;
    options.http2 = false;
    CurlTransport transport(loop, TlsConfig(), options);
    std::vector<Collected> all(4);
    for (auto& c : all) Get(transport, "/headers", c);
    for (auto& c : all) Finish(loop, c);
    for (auto& c : all) {
      CHECK(c.done->ok());
      CHECK_FALSE(PeerPort(c.body).empty());
      CHECK(PeerPort(c.body) == PeerPort(all[0].body));
    }
  }
  RequireClosesClean(loop);
}

TEST_CASE("Many concurrent requests all complete", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    std::vector<Collected> all(40);
    for (size_t i = 0; i < all.size(); ++i) {
      Get(transport, i % 2 == 0 ? "/json" : "/big?bytes=50000", all[i]);
    }
    REQUIRE(RunUntil(
        loop,
        [&] {
          for (auto& c : all) {
            if (!c.done) return false;
          }
          return true;
        },
        2 * kWaitMs));
    uint64_t bytes = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      INFO(i << ": " << all[i].done->transport_error);
      CHECK(all[i].done->ok());
      CHECK(all[i].dones == 1);
      bytes += all[i].body.size();
    }
    CHECK(transport.stats().bytes_received == bytes);
    CHECK(transport.stats().requests_started == all.size());
  }
  RequireClosesClean(loop);
}

TEST_CASE("Destroying the transport mid-request runs no callback and frees everything", "[curl]") {
  loop::Loop loop;
  Collected watch, slow, fresh;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    Get(transport, "/watch?lines=1&hold=1", watch, 0);
    Get(transport, "/slow?delay_ms=2000", slow);
    REQUIRE(RunUntil(
        loop, [&] { return !watch.body.empty(); }, kWaitMs));
    Get(transport, "/json", fresh);  // not even started
  }
  CHECK(watch.dones == 0);
  CHECK(slow.callbacks() == 0);
  CHECK(fresh.callbacks() == 0);
  RequireClosesClean(loop);
}

TEST_CASE("on_done may destroy the transport", "[curl]") {
  loop::Loop loop;
  auto transport = std::make_unique<CurlTransport>(loop, TlsConfig(), TestOptions());
  Collected other;
  Get(*transport, "/watch?lines=1&hold=1", other, 0);
  bool done = false;
  transport->Get("/json",
                 {.on_head = {},
                  .on_body = {},
                  .on_done =
                      [&](const ApiResult&) {
                        done = true;
                        transport.reset();
                      }},
                 kWaitMs);
  REQUIRE(RunUntil(
      loop, [&] { return done; }, kWaitMs));
  CHECK(transport == nullptr);
  CHECK(other.dones == 0);
  RequireClosesClean(loop);
}

TEST_CASE("A request that cannot be set up fails later, not inside Get", "[curl]") {
  loop::Loop loop;
  {
    CurlTransport transport(loop, TlsConfig(), TestOptions());
    // Longer than curl accepts for a string option (CURL_MAX_INPUT_LENGTH, 8 MB).
    const std::string too_long =
        "/" + std::string(9'000'000, 'a');  // NOLINT(bugprone-string-constructor): on purpose
    Collected c;
    Get(transport, too_long, c);
    CHECK(c.callbacks() == 0);
    Finish(loop, c);
    INFO(c.done->transport_error);
    CHECK_FALSE(c.done->ok());
    CHECK(c.done->transport_error.find("curl option") != std::string::npos);

    Collected cancelled;
    auto id = Get(transport, too_long, cancelled);
    transport.Cancel(id);
    for (int i = 0; i < 5; ++i) loop.RunNoWait();
    CHECK(cancelled.callbacks() == 0);
  }
  RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::k8s

// Fixtures shared by the CurlTransport tests (test code only): a real local HTTP(S) server,
// test/fixtures/curl_test_server.py (Python stdlib, so HTTP/1.1 only; the HTTP/2 path is not
// exercised here), a throwaway CA with server and client certificates made with the openssl
// CLI once per test run, and a collector of everything one request delivers.
//
// Thread: the test's thread; the servers are child processes shared by every test.
#pragma once

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
#include "common/k8s/curl_transport.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "test/unit/temp_dir.h"

extern char** environ;

namespace kdns::k8s::curl_testing {

using kdns::testing::TempDir;

using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;

constexpr int kWaitMs = 10'000;

inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  REQUIRE(out.good());
}

inline std::string ReadFile(const std::string& path) {
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

inline const Certificates& Certs() {
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

inline const TestServer& TlsServer() {
  static const TestServer server(/*tls=*/true);
  return server;
}

inline const TestServer& PlainServer() {
  static const TestServer server(/*tls=*/false);
  return server;
}

inline ApiConfig TlsConfig() {
  ApiConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(TlsServer().port());
  config.ca_file = Certs().File("ca.crt");
  return config;
}

inline CurlTransport::Options TestOptions() {
  CurlTransport::Options options;
  options.use_environment_proxy = false;  // the servers are local whatever the environment says
  return options;
}

// The "peer-port" field of a /headers body: the client's port, to see connection reuse.
inline std::string PeerPort(const std::string& headers_body) {
  size_t at = headers_body.find("\"peer-port\"");
  return at == std::string::npos ? "" : headers_body.substr(at, headers_body.find(',', at) - at);
}

// Everything one request delivered. `inside_call` is set around Get()/Cancel() so that a
// callback running from inside them is noticed.
inline bool inside_call = false;

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

inline ApiTransport::Callbacks Collect(Collected& c) {
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

inline ApiTransport::RequestId Get(ApiTransport& transport, const std::string& path, Collected& c,
                                   uint64_t timeout_ms = kWaitMs) {
  inside_call = true;
  auto id = transport.Get(path, Collect(c), timeout_ms);
  inside_call = false;
  return id;
}

// Runs until the request is done; checks the invariants every request keeps.
inline void Finish(loop::Loop& loop, Collected& c) {
  REQUIRE(RunUntil(
      loop, [&] { return c.done.has_value(); }, kWaitMs));
  CHECK(c.dones == 1);
  CHECK(c.heads <= 1);
  CHECK_FALSE(c.body_before_head);
  CHECK_FALSE(c.called_from_inside);
}

}  // namespace kdns::k8s::curl_testing

#include "common/k8s/api_config.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "common/base/clock.h"
#include "common/k8s/testing.h"
#include "test/unit/temp_dir.h"

namespace kdns::k8s {
namespace {

using kdns::testing::TempDir;
using testing::Env;

// Kubeconfig fixtures, relative to the repository root where the tests run.
const std::string kDir = "test/fixtures/kubeconfig/";

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
  REQUIRE(out.good());
}

TEST_CASE("A kubeconfig with inline data decodes the base64 PEMs", "[api_config]") {
  auto config = FromKubeconfig(kDir + "data.yaml");
  INFO(config.error());
  REQUIRE(config.ok());
  CHECK(config->server == "https://10.0.0.1:6443");  // trailing slash dropped
  CHECK(config->ca_file.empty());
  CHECK(config->ca_pem == "-----BEGIN CERTIFICATE-----\nfake ca\n-----END CERTIFICATE-----\n");
  CHECK(config->client_cert_pem ==
        "-----BEGIN CERTIFICATE-----\nfake client\n-----END CERTIFICATE-----\n");
  CHECK(config->client_key_pem ==
        "-----BEGIN PRIVATE KEY-----\nfake key\n-----END PRIVATE KEY-----\n");
  CHECK(config->token == "inline-token");
  CHECK(config->token_file.empty());
  CHECK(config->tls_server_name == "kubernetes.default.svc");
  CHECK_FALSE(config->insecure_skip_tls_verify);
}

TEST_CASE("Relative paths in a kubeconfig resolve against its directory", "[api_config]") {
  SECTION("kubeconfig given by a relative path") {
    auto config = FromKubeconfig(kDir + "files.yaml");
    INFO(config.error());
    REQUIRE(config.ok());
    CHECK(config->server == "https://[fd00::1]:443");
    CHECK(config->ca_file == kDir + "certs/ca.crt");
    CHECK(config->client_cert_file == kDir + "certs/client.crt");
    CHECK(config->client_key_file == kDir + "certs/client.key");
    CHECK(config->token_file == kDir + "token");
    CHECK(config->token.empty());
    CHECK(config->ca_pem.empty());
  }
  SECTION("kubeconfig given by an absolute path") {
    std::string dir = std::filesystem::absolute(kDir).lexically_normal().string();
    auto config = FromKubeconfig(dir + "files.yaml");
    INFO(config.error());
    REQUIRE(config.ok());
    CHECK(config->ca_file == dir + "certs/ca.crt");
    CHECK(config->token_file == dir + "token");
  }
}

TEST_CASE("The current context or the one given is used", "[api_config]") {
  SECTION("current-context") {
    auto config = FromKubeconfig(kDir + "contexts.yaml");
    INFO(config.error());
    REQUIRE(config.ok());
    CHECK(config->server == "https://api.example:6443");
    CHECK(config->insecure_skip_tls_verify);
    CHECK(config->token == "static-token");
  }
  SECTION("a context without a user: no credentials") {
    auto config = FromKubeconfig(kDir + "contexts.yaml", "no-user");
    INFO(config.error());
    REQUIRE(config.ok());
    CHECK(config->server == "http://127.0.0.1:8080");
    CHECK(config->token.empty());
    CHECK(config->client_cert_file.empty());
    CHECK_FALSE(config->insecure_skip_tls_verify);
  }
}

TEST_CASE("Broken or unsupported kubeconfigs give one clear line", "[api_config]") {
  auto [file, context, expected] = GENERATE(table<std::string, std::string, std::string>({
      {"contexts.yaml", "missing-cluster",
       "context \"missing-cluster\" names cluster \"nowhere\", which is not defined"},
      {"contexts.yaml", "missing-user",
       "context \"missing-user\" names user \"nobody\", which is not defined"},
      {"contexts.yaml", "no-cluster", "context \"no-cluster\" names no cluster"},
      {"contexts.yaml", "no-such-context", "context \"no-such-context\" is not defined"},
      {"contexts.yaml", "exec",
       "user \"exec\" uses an exec credential plugin (command \"aws\"), which kdns does not "
       "support"},
      {"contexts.yaml", "auth-provider",
       "user \"auth-provider\" uses auth-provider \"gcp\", which kdns does not support"},
      {"contexts.yaml", "basic-auth", "basic auth (username/password)"},
      {"contexts.yaml", "cert-without-key", "needs both client-certificate and client-key"},
      {"contexts.yaml", "missing-file",
       "certificate-authority " + kDir + "certs/missing.crt: No such file"},
      {"contexts.yaml", "both-ca",
       "both certificate-authority and certificate-authority-data are set"},
      {"contexts.yaml", "insecure-with-ca",
       "insecure-skip-tls-verify and a certificate-authority are both set"},
      {"contexts.yaml", "bad-base64", "certificate-authority-data is not valid base64"},
      {"contexts.yaml", "no-server", "cluster \"no-server\" has no server"},
      {"contexts.yaml", "ftp-server", "is not http:// or https://"},
      {"contexts.yaml", "proxy", "proxy-url is not supported"},
      {"contexts.yaml", "missing-token-file", "tokenFile " + kDir + "no-such-token: No such file"},
      {"no-current-context.yaml", "", "no current-context is set"},
      {"not-a-map.yaml", "", "not a YAML map"},
      {"no-such-file.yaml", "", "no-such-file.yaml: No such file"},
  }));
  INFO(file << " context " << context);
  auto config = FromKubeconfig(kDir + file, context);
  REQUIRE_FALSE(config.ok());
  INFO(config.error());
  CHECK(config.error().rfind("kubeconfig " + kDir, 0) == 0);
  CHECK(config.error().find(expected) != std::string::npos);
  CHECK(config.error().find('\n') == std::string::npos);
}

TEST_CASE("Malformed YAML is an error, not an exception", "[api_config]") {
  TempDir dir;
  SECTION("syntax") { WriteFile(dir.File("config"), "clusters: [unclosed\n"); }
  SECTION("a list where a string belongs") {
    WriteFile(dir.File("config"), "current-context: [a, b]\n");
  }
  SECTION("insecure-skip-tls-verify that is not a bool") {
    WriteFile(dir.File("config"),
              "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
              "clusters: [{name: k, cluster: {server: 'https://a', insecure-skip-tls-verify: "
              "maybe}}]\n");
  }
  auto config = FromKubeconfig(dir.File("config"));
  REQUIRE_FALSE(config.ok());
  INFO(config.error());
  CHECK(config.error().rfind("kubeconfig " + dir.File("config") + ": ", 0) == 0);
}

TEST_CASE("In-cluster config comes from the service environment and account files",
          "[api_config]") {
  TempDir root;
  WriteFile(root.File("token"), "  sa-token\n");
  WriteFile(root.File("ca.crt"), "ca");
  SECTION("IPv4") {
    auto config = FromInCluster(
        Env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
        root.path());
    INFO(config.error());
    REQUIRE(config.ok());
    CHECK(config->server == "https://10.96.0.1:443");
    CHECK(config->token_file == root.File("token"));
    CHECK(config->token == "sa-token");
    CHECK(config->ca_file == root.File("ca.crt"));
    CHECK_FALSE(config->insecure_skip_tls_verify);
  }
  SECTION("IPv6 hosts go in brackets") {
    auto config = FromInCluster(
        Env({{"KUBERNETES_SERVICE_HOST", "fd00:10:96::1"}, {"KUBERNETES_SERVICE_PORT", "6443"}}),
        root.path());
    REQUIRE(config.ok());
    CHECK(config->server == "https://[fd00:10:96::1]:6443");
  }
}

TEST_CASE("In-cluster config fails clearly outside a pod", "[api_config]") {
  TempDir root;
  WriteFile(root.File("token"), "sa-token\n");
  WriteFile(root.File("ca.crt"), "ca");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  std::string expected;
  SECTION("no host") {
    env.erase("KUBERNETES_SERVICE_HOST");
    expected = "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set";
  }
  SECTION("no port") {
    env.erase("KUBERNETES_SERVICE_PORT");
    expected = "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set";
  }
  SECTION("bad port") {
    env["KUBERNETES_SERVICE_PORT"] = "https";
    expected = "KUBERNETES_SERVICE_PORT \"https\" is not a port";
  }
  SECTION("no token") {
    std::filesystem::remove(root.File("token"));
    expected = "service account token " + root.File("token") + ": No such file";
  }
  SECTION("empty token") {
    WriteFile(root.File("token"), "\n");
    expected = "empty token file";
  }
  SECTION("no CA") {
    std::filesystem::remove(root.File("ca.crt"));
    expected = "CA " + root.File("ca.crt") + ": No such file";
  }
  auto config = FromInCluster(Env(env), root.path());
  REQUIRE_FALSE(config.ok());
  INFO(config.error());
  CHECK(config.error().rfind("in-cluster config: ", 0) == 0);
  CHECK(config.error().find(expected) != std::string::npos);
}

TEST_CASE("--kube-master-url takes an http or https URL", "[api_config]") {
  auto [url, server] = GENERATE(table<std::string, std::string>({
      {"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
      {"http://127.0.0.1:8080/", "http://127.0.0.1:8080"},
      {"https://api.example:6443", "https://api.example:6443"},
  }));
  auto config = FromMasterUrl(url);
  REQUIRE(config.ok());
  CHECK(config->server == server);
  CHECK(config->token.empty());
  CHECK(config->ca_file.empty());

  for (std::string bad : {"127.0.0.1:8080", "ftp://x", "http://", ""}) {
    INFO(bad);
    auto failed = FromMasterUrl(bad);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().rfind("--kube-master-url: ", 0) == 0);
  }
}

TEST_CASE("A static token is handed out as it is", "[api_config][token]") {
  ManualClock clock;
  TokenProvider tokens("static", "", clock);
  CHECK(tokens.Token() == "static");
  tokens.InvalidateToken();
  CHECK(tokens.Token() == "static");
  CHECK(tokens.read_failures() == 0);
}

TEST_CASE("The token file is re-read at most every interval, and at once after a 401",
          "[api_config][token]") {
  TempDir dir;
  std::string file = dir.File("token");
  WriteFile(file, "one\n");
  ManualClock clock(5000);
  TokenProvider tokens("fallback", file, clock, {.refresh_interval_ms = 60'000});

  CHECK(tokens.Token() == "one");  // the file wins over the static token
  WriteFile(file, "two\n");
  clock.AdvanceMs(59'999);
  CHECK(tokens.Token() == "one");  // cached
  clock.AdvanceMs(1);
  CHECK(tokens.Token() == "two");  // interval passed

  WriteFile(file, "three\n");
  clock.AdvanceMs(1000);
  CHECK(tokens.Token() == "two");
  tokens.InvalidateToken();  // 401
  CHECK(tokens.Token() == "three");
  CHECK(tokens.read_failures() == 0);
  CHECK(tokens.last_error().empty());
}

TEST_CASE("A failed token read keeps the last good token", "[api_config][token]") {
  TempDir dir;
  std::string file = dir.File("token");
  ManualClock clock;
  TokenProvider tokens("fallback", file, clock, {.refresh_interval_ms = 1000});

  CHECK(tokens.Token() == "fallback");  // never read: the static token
  CHECK(tokens.read_failures() == 1);
  CHECK(tokens.last_error().find("No such file") != std::string::npos);

  WriteFile(file, "good");
  tokens.InvalidateToken();
  CHECK(tokens.Token() == "good");
  CHECK(tokens.last_error().empty());

  SECTION("file removed") { std::filesystem::remove(file); }
  SECTION("file emptied") { WriteFile(file, "  \n"); }
  SECTION("two lines") { WriteFile(file, "new\ntoken\n"); }
  clock.AdvanceMs(1000);
  CHECK(tokens.Token() == "good");
  CHECK(tokens.read_failures() == 2);
  CHECK_FALSE(tokens.last_error().empty());
  tokens.InvalidateToken();
  CHECK(tokens.Token() == "good");
  CHECK(tokens.read_failures() == 3);
}

}  // namespace
}  // namespace kdns::k8s

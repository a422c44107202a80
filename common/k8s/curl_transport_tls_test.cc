// CurlTransport over TLS: certificate checks, client certificates, tls_server_name.

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/k8s/curl_transport.h"
#include "common/k8s/curl_transport_testing.h"

namespace kdns::k8s {
namespace {

using namespace curl_testing;  // NOLINT(google-build-using-namespace): the shared fixtures

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "A server certificate from another CA fails with a TLS error", "[curl]") {
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

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "insecure_skip_tls_verify accepts an unknown certificate", "[curl]") {
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

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "The CA and a client certificate may be files or PEM data", "[curl]") {
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

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "tls_server_name is the name the certificate is checked against", "[curl]") {
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

}  // namespace
}  // namespace kdns::k8s

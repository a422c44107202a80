// Test helpers for TLS (loop/tls_session.h): a throwaway PKI made in memory at test time (a
// CA and a server certificate it signs, for a DNS name and an IP address), and a server-side
// SSL_CTX holding that certificate. Header-only; included by *_test.cc files only.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <string>

namespace kdns::loop::testing {

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;

inline Pkey NewKey() {
  Pkey key(EVP_EC_gen("P-256"));
  REQUIRE(key != nullptr);
  return key;
}

inline void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  REQUIRE(ext != nullptr);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `common_name`, signed by `issuer_key` (self-signed when
// `issuer` is null), valid for a day.
inline Cert NewCert(EVP_PKEY* key, const char* common_name, X509* issuer, EVP_PKEY* issuer_key,
                    const char* subject_alt_names) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (issuer == nullptr) {
    AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExtension(cert.get(), signer, NID_subject_alt_name, subject_alt_names);
  }
  REQUIRE(X509_sign(cert.get(), issuer_key, EVP_sha256()) > 0);
  return cert;
}

// A CA and a server certificate for `subject_alt_names` ("DNS:dns.test,IP:127.0.0.1");
// the CA's PEM written to a file (TlsContext::Create takes a path).
struct TestPki {
  explicit TestPki(const char* subject_alt_names = "DNS:dns.test,IP:127.0.0.1") {
    ca_key = NewKey();
    // A name of its own: another TestPki's CA is another issuer, not a forgery of this one.
    static int instances = 0;
    const std::string ca_name = "kdns test CA " + std::to_string(++instances);
    ca = NewCert(ca_key.get(), ca_name.c_str(), nullptr, ca_key.get(), nullptr);
    server_key = NewKey();
    server = NewCert(server_key.get(), "dns.test", ca.get(), ca_key.get(), subject_alt_names);
    char path[] = "/tmp/kdns-test-ca-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    ca_file = path;
    FILE* file = std::fopen(path, "w");
    REQUIRE(file != nullptr);
    PEM_write_X509(file, ca.get());
    std::fclose(file);
  }
  ~TestPki() { std::remove(ca_file.c_str()); }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  // A server context presenting the server certificate.
  SslCtx ServerContext() const {
    SslCtx ctx(SSL_CTX_new(TLS_server_method()));
    REQUIRE(SSL_CTX_use_certificate(ctx.get(), server.get()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey(ctx.get(), server_key.get()) == 1);
    return ctx;
  }

  Pkey ca_key;
  Cert ca;
  Pkey server_key;
  Cert server;
  std::string ca_file;
};

}  // namespace kdns::loop::testing

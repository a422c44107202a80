// ApiConfig: where the Kubernetes API server is and how to authenticate to it, loaded the
// three ways kube-dns supports: in-cluster service account, a kubeconfig file, or a bare
// --kube-master-url. The loaders are start-up code: they read files, check that the files
// they name are readable, and return a value or a one-line error; they never throw or
// abort. CurlTransport turns an ApiConfig into curl options.
//
// TokenProvider hands out the bearer token, re-reading `token_file` because service-account
// tokens rotate (the kubelet rewrites the file about hourly): at most every refresh interval,
// and at once after the server answered 401 (InvalidateToken). A failed read keeps the last
// good token.
//
// Thread: ApiConfig and the loaders are plain values and functions (any thread). A
// TokenProvider belongs to one thread (the transport's loop thread).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/base/clock.h"
#include "common/k8s/result.h"

namespace kdns::k8s {

struct ApiConfig {
  std::string server;  // "https://host:port" (or http://), no trailing slash
  // Trust: a CA file or PEM data (either replaces the system CAs), or no verification.
  std::string ca_file;
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
  // Bearer token: `token_file` is re-read (it rotates); when it is readable it wins over
  // `token`, as in client-go.
  std::string token;
  std::string token_file;
  // Client certificate authentication, from files or PEM data.
  std::string client_cert_file;
  std::string client_key_file;
  std::string client_cert_pem;
  std::string client_key_pem;
  // The name to verify the server certificate against (and send as SNI) when it differs
  // from the host in `server`.
  std::string tls_server_name;
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process environment (getenv).
EnvLookup ProcessEnv();

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// In-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (an IPv6 host goes in
// brackets), CA `<root_dir>/ca.crt`, token file `<root_dir>/token` (must be readable now;
// re-read later).
Result<ApiConfig> FromInCluster(const EnvLookup& env,
                                const std::string& root_dir = kServiceAccountDir);

// A kubeconfig file: current-context (or `context_override`) → its cluster and user.
// Relative file paths resolve against the kubeconfig's directory. exec and auth-provider
// plugins, basic auth, impersonation and proxy-url are rejected with an error that says so.
Result<ApiConfig> FromKubeconfig(const std::string& path, const std::string& context_override = "");

// kube-dns's --kube-master-url: http://127.0.0.1:8080 (no auth) or an https URL (system CAs).
Result<ApiConfig> FromMasterUrl(const std::string& url);

class TokenProvider {
 public:
  struct Options {
    uint64_t refresh_interval_ms = 60'000;
  };

  // `token` is used while `token_file` is empty or has never been read successfully.
  TokenProvider(std::string token, std::string token_file, const Clock& clock, Options options);
  TokenProvider(std::string token, std::string token_file, const Clock& clock)
      : TokenProvider(std::move(token), std::move(token_file), clock, Options{}) {}

  // The current bearer token ("" when there is none), re-reading the file when due.
  const std::string& Token();
  // The server rejected the token (401): the next Token() re-reads the file.
  void InvalidateToken() { next_read_ms_.reset(); }

  // File reads that failed (the last good token was kept), for metrics.
  uint64_t read_failures() const { return read_failures_; }
  // The error of the last failed read; empty after a good one.
  const std::string& last_error() const { return last_error_; }

 private:
  std::string token_;
  const std::string token_file_;
  const Clock& clock_;
  const Options options_;
  std::optional<uint64_t> next_read_ms_;  // nullopt: read on the next Token()
  uint64_t read_failures_ = 0;
  std::string last_error_;
};

// Reads a token file: its content without surrounding whitespace. Fails on an unreadable or
// empty file. Exposed for tests.
Result<std::string> ReadTokenFile(const std::string& path);

}  // namespace kdns::k8s

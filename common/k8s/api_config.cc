#include "common/k8s/api_config.h"

#include <glog/logging.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include "common/base/port.h"

namespace kdns::k8s {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Result<std::string>::Failure(path + ": " + std::generic_category().message(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Result<std::string>::Failure(path + ": read error");
  return data;
}

std::string Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return "";
  size_t end = s.find_last_not_of(kSpace);
  return std::string(s.substr(begin, end - begin + 1));
}

// A token goes into an HTTP header: no line breaks or other control characters.
bool IsHeaderSafe(std::string_view token) {
  return std::none_of(token.begin(), token.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// Standard base64 (RFC 4648 section 4); whitespace is skipped and padding is optional, as
// kubeconfig writers differ.
std::optional<std::string> Base64Decode(std::string_view in) {
  std::string out;
  uint32_t bits = 0;
  int nbits = 0;
  bool padding = false;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=') {
      padding = true;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return std::nullopt;
    }
    if (padding) return std::nullopt;  // data after '='
    bits = (bits << 6) | static_cast<uint32_t>(v);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out.push_back(static_cast<char>((bits >> nbits) & 0xff));
    }
  }
  if (nbits >= 6) return std::nullopt;  // a lone trailing character
  return out;
}

// "https://host:port/" → "https://host:port"; rejects other schemes and a missing host.
Result<std::string> NormalizeServer(std::string url) {
  size_t scheme_end = url.find("://");
  std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Result<std::string>::Failure("server URL \"" + url + "\" is not http:// or https://");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() <= scheme_end + 3) {
    return Result<std::string>::Failure("server URL \"" + url + "\" has no host");
  }
  return url;
}

// A file named by a kubeconfig: relative paths are relative to the kubeconfig's directory.
std::string ResolvePath(const std::filesystem::path& base_dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (base_dir / path).lexically_normal().string();
}

// Parses one kubeconfig; throws YAML::Exception on malformed YAML or wrong value types
// (FromKubeconfig catches them).
class KubeconfigLoader {
 public:
  KubeconfigLoader(std::string path, const YAML::Node& root)
      : path_(std::move(path)), dir_(std::filesystem::path(path_).parent_path()), root_(root) {}

  Result<ApiConfig> Load(const std::string& context_override) {
    std::string context_name = context_override;
    if (context_name.empty()) context_name = String(root_, "current-context");
    if (context_name.empty()) return Fail("no current-context is set and no context was given");
    YAML::Node context = FindNamed("contexts", context_name, "context");
    if (!context) return Fail("context \"" + context_name + "\" is not defined");

    std::string cluster_name = String(context, "cluster");
    if (cluster_name.empty()) return Fail("context \"" + context_name + "\" names no cluster");
    YAML::Node cluster = FindNamed("clusters", cluster_name, "cluster");
    if (!cluster) {
      return Fail("context \"" + context_name + "\" names cluster \"" + cluster_name +
                  "\", which is not defined");
    }
    ApiConfig config;
    if (auto error = LoadCluster(cluster_name, cluster, config); !error.empty()) {
      return Fail(error);
    }

    std::string user_name = String(context, "user");
    if (user_name.empty()) return config;  // no credentials
    YAML::Node user = FindNamed("users", user_name, "user");
    if (!user) {
      return Fail("context \"" + context_name + "\" names user \"" + user_name +
                  "\", which is not defined");
    }
    if (auto error = LoadUser(user_name, user, config); !error.empty()) return Fail(error);
    return config;
  }

 private:
  static constexpr char kSupported[] = "use a token, tokenFile or client certificate instead";

  Result<ApiConfig> Fail(const std::string& what) const {
    return Result<ApiConfig>::Failure("kubeconfig " + path_ + ": " + what);
  }

  static std::string String(const YAML::Node& node, const char* key) {
    YAML::Node value = node[key];
    if (!value || value.IsNull()) return "";
    return value.as<std::string>();
  }

  // The `field` map of the entry called `name` in the list `list` ("clusters" → "cluster").
  YAML::Node FindNamed(const char* list, const std::string& name, const char* field) const {
    YAML::Node items = root_[list];
    if (!items || !items.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
    for (const YAML::Node& item : items) {
      if (item.IsMap() && String(item, "name") == name) {
        YAML::Node inner = item[field];
        return inner && inner.IsMap() ? inner : YAML::Node(YAML::NodeType::Map);
      }
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }

  // A PEM value from `<key>-data` (base64) or the file `<key>`; error if both are given.
  std::string PemOrFile(const std::string& owner, const YAML::Node& node, const std::string& key,
                        std::string& file, std::string& pem) const {
    std::string data = String(node, (key + "-data").c_str());
    std::string path = String(node, key.c_str());
    if (!data.empty() && !path.empty()) {
      return owner + ": both " + key + " and " + key + "-data are set";
    }
    if (!data.empty()) {
      auto decoded = Base64Decode(data);
      if (!decoded) return owner + ": " + key + "-data is not valid base64";
      pem = std::move(*decoded);
    } else if (!path.empty()) {
      file = ResolvePath(dir_, path);
      if (auto read = ReadFile(file); !read.ok()) return owner + ": " + key + " " + read.error();
    }
    return "";
  }

  std::string LoadCluster(const std::string& name, const YAML::Node& cluster,
                          ApiConfig& config) const {
    std::string owner = "cluster \"" + name + "\"";
    std::string server = String(cluster, "server");
    if (server.empty()) return owner + " has no server";
    auto normalized = NormalizeServer(server);
    if (!normalized.ok()) return owner + ": " + normalized.error();
    config.server = std::move(normalized.value());
    if (!String(cluster, "proxy-url").empty()) return owner + ": proxy-url is not supported";
    config.insecure_skip_tls_verify =
        cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>();
    config.tls_server_name = String(cluster, "tls-server-name");
    if (auto error =
            PemOrFile(owner, cluster, "certificate-authority", config.ca_file, config.ca_pem);
        !error.empty()) {
      return error;
    }
    if (config.insecure_skip_tls_verify && (!config.ca_file.empty() || !config.ca_pem.empty())) {
      return owner + ": insecure-skip-tls-verify and a certificate-authority are both set";
    }
    return "";
  }

  std::string LoadUser(const std::string& name, const YAML::Node& user, ApiConfig& config) const {
    std::string owner = "user \"" + name + "\"";
    if (YAML::Node exec = user["exec"]; exec && !exec.IsNull()) {
      return owner + " uses an exec credential plugin (command \"" + String(exec, "command") +
             "\"), which kdns does not support; " + kSupported;
    }
    if (YAML::Node provider = user["auth-provider"]; provider && !provider.IsNull()) {
      return owner + " uses auth-provider \"" + String(provider, "name") +
             "\", which kdns does not support; " + kSupported;
    }
    if (!String(user, "username").empty() || !String(user, "password").empty()) {
      return owner + " uses basic auth (username/password), which kdns does not support; " +
             kSupported;
    }
    if (!String(user, "as").empty()) return owner + ": impersonation (as) is not supported";

    config.token = String(user, "token");
    if (!IsHeaderSafe(config.token)) return owner + ": token contains control characters";
    std::string token_file = String(user, "tokenFile");
    if (!token_file.empty()) {
      config.token_file = ResolvePath(dir_, token_file);
      if (auto read = ReadTokenFile(config.token_file); !read.ok()) {
        return owner + ": tokenFile " + read.error();
      }
    }
    if (auto error = PemOrFile(owner, user, "client-certificate", config.client_cert_file,
                               config.client_cert_pem);
        !error.empty()) {
      return error;
    }
    if (auto error =
            PemOrFile(owner, user, "client-key", config.client_key_file, config.client_key_pem);
        !error.empty()) {
      return error;
    }
    bool has_cert = !config.client_cert_file.empty() || !config.client_cert_pem.empty();
    bool has_key = !config.client_key_file.empty() || !config.client_key_pem.empty();
    if (has_cert != has_key) {
      return owner + ": a client certificate needs both client-certificate and client-key";
    }
    return "";
  }

  const std::string path_;
  const std::filesystem::path dir_;
  const YAML::Node root_;
};

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Result<std::string> ReadTokenFile(const std::string& path) {
  auto data = ReadFile(path);
  if (!data.ok()) return data;
  std::string token = Trim(data.value());
  if (token.empty()) return Result<std::string>::Failure(path + ": empty token file");
  if (!IsHeaderSafe(token)) {
    return Result<std::string>::Failure(path + ": token contains control characters");
  }
  return token;
}

Result<ApiConfig> FromInCluster(const EnvLookup& env, const std::string& root_dir) {
  auto fail = [](const std::string& what) {
    return Result<ApiConfig>::Failure("in-cluster config: " + what);
  };
  std::optional<std::string> host = env("KUBERNETES_SERVICE_HOST");
  std::optional<std::string> port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return fail(
        "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (not running in a pod?)");
  }
  if (!ParsePort(*port)) return fail("KUBERNETES_SERVICE_PORT \"" + *port + "\" is not a port");
  bool ipv6 = host->find(':') != std::string::npos && host->front() != '[';
  ApiConfig config;
  config.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  config.token_file = root_dir + "/token";
  auto token = ReadTokenFile(config.token_file);
  if (!token.ok()) return fail("service account token " + token.error());
  config.token = std::move(token.value());  // kept if the file later becomes unreadable
  config.ca_file = root_dir + "/ca.crt";
  if (auto ca = ReadFile(config.ca_file); !ca.ok()) return fail("CA " + ca.error());
  return config;
}

Result<ApiConfig> FromKubeconfig(const std::string& path, const std::string& context_override) {
  auto text = ReadFile(path);
  if (!text.ok()) return Result<ApiConfig>::Failure("kubeconfig " + text.error());
  try {
    YAML::Node root = YAML::Load(text.value());
    if (!root.IsMap()) return Result<ApiConfig>::Failure("kubeconfig " + path + ": not a YAML map");
    return KubeconfigLoader(path, root).Load(context_override);
  } catch (const YAML::Exception& e) {
    return Result<ApiConfig>::Failure("kubeconfig " + path + ": " + e.what());
  }
}

Result<ApiConfig> FromMasterUrl(const std::string& url) {
  auto server = NormalizeServer(url);
  if (!server.ok()) return Result<ApiConfig>::Failure("--kube-master-url: " + server.error());
  ApiConfig config;
  config.server = std::move(server.value());
  return config;
}

TokenProvider::TokenProvider(std::string token, std::string token_file, const Clock& clock,
                             Options options)
    : token_(std::move(token)),
      token_file_(std::move(token_file)),
      clock_(clock),
      options_(options) {}

const std::string& TokenProvider::Token() {
  if (token_file_.empty()) return token_;
  uint64_t now_ms = clock_.NowMs();
  if (next_read_ms_ && now_ms < *next_read_ms_) return token_;
  next_read_ms_ = now_ms + options_.refresh_interval_ms;
  auto read = ReadTokenFile(token_file_);
  if (read.ok()) {
    token_ = std::move(read.value());
    last_error_.clear();
  } else {
    ++read_failures_;
    last_error_ = read.error();
    LOG_EVERY_N(WARNING, 10) << "cannot re-read the API token, keeping the last one: "
                             << last_error_;
  }
  return token_;
}

}  // namespace kdns::k8s

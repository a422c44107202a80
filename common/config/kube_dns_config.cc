#include "common/config/kube_dns_config.h"

#include <fcntl.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "common/base/unique_fd.h"
#include "common/upstream/upstream_address.h"

namespace kdns::config {
namespace {

constexpr const char* kDataLink = "..data";
// How often we start over when the kubelet swaps `..data` while we read.
constexpr int kMaxReadAttempts = 5;

std::string Errno(int error_number) { return std::strerror(error_number); }

// The target of `dir`'s `..data` symlink; nullopt with *error_number set when there is none
// (ENOENT: no such entry, EINVAL: not a symlink). Paths rather than directory descriptors
// throughout (also below): ThreadSanitizer tracks what open(2) creates, and the DNS threads'
// libuv closes sockets with a raw system call it does not see.
std::optional<std::string> ReadDataLink(const std::string& dir, int* error_number) {
  const std::string link = dir + "/" + kDataLink;
  char target[4096];
  ssize_t n = readlink(link.c_str(), target, sizeof(target));
  if (n < 0 || static_cast<size_t>(n) >= sizeof(target)) {
    *error_number = n < 0 ? errno : ENAMETOOLONG;
    return std::nullopt;
  }
  return std::string(target, static_cast<size_t>(n));
}

// Whether `path` is a directory; otherwise false with *error_number set.
bool IsDirectory(const std::string& path, int* error_number) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    *error_number = errno;
    return false;
  }
  *error_number = ENOTDIR;
  return S_ISDIR(st.st_mode);
}

enum class ReadStatus { kOk, kMissing, kError };

// Reads `dir`/`name` into *out. kMissing when it does not exist.
ReadStatus ReadKey(const std::string& dir, std::string_view name, std::string* out,
                   std::string* error) {
  const std::string key(name);
  const std::string path = dir + "/" + key;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int open_error = errno;
    if (open_error == ENOENT) return ReadStatus::kMissing;
    *error = key + ": cannot open: " + Errno(open_error);
    return ReadStatus::kError;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = key + ": not a regular file";
    return ReadStatus::kError;
  }
  out->clear();
  char buffer[16384];
  while (true) {
    ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    const int read_error = n < 0 ? errno : 0;
    if (read_error == EINTR) continue;
    if (n < 0) {
      *error = key + ": cannot read: " + Errno(read_error);
      return ReadStatus::kError;
    }
    if (n == 0) break;
    out->append(buffer, static_cast<size_t>(n));
    if (out->size() > kMaxValueBytes) {
      *error = key + ": larger than a ConfigMap can be (1 MiB)";
      return ReadStatus::kError;
    }
  }
  return ReadStatus::kOk;
}

// Reads the keys from `dir`; on failure *error names the key (relative to `dir`).
bool ReadKeys(const std::string& dir, ConfigDirData* data, std::string* error) {
  ConfigDirData result;
  for (auto [key, value] : {std::pair{kStubDomainsKey, &result.stub_domains},
                            std::pair{kUpstreamNameserversKey, &result.upstream_nameservers},
                            std::pair{kLogQueriesKey, &result.log_queries},
                            std::pair{kDebugDataKey, &result.debug_data},
                            std::pair{kRouteOptionsKey, &result.route_options}}) {
    std::string text;
    switch (ReadKey(dir, key, &text, error)) {
      case ReadStatus::kOk:
        *value = std::move(text);
        break;
      case ReadStatus::kMissing:
        break;
      case ReadStatus::kError:
        return false;
    }
  }
  *data = std::move(result);
  return true;
}

std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += "\\x";
      const char* hex = "0123456789abcdef";
      out += hex[(c >> 4) & 0xF];
      out += hex[c & 0xF];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Parses JSON text; the document is null for an absent value.
bool ParseJson(std::string_view key, const std::string& text, rapidjson::Document* doc,
               std::string* error) {
  if (text.find('\0') != std::string::npos) {
    *error = std::string(key) + ": not JSON: a NUL byte";
    return false;
  }
  constexpr unsigned kFlags =
      rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;
  doc->Parse<kFlags>(text.data(), text.size());
  if (doc->HasParseError()) {
    *error = std::string(key) + ": not JSON: " + rapidjson::GetParseError_En(doc->GetParseError()) +
             " at offset " + std::to_string(doc->GetErrorOffset());
    return false;
  }
  return true;
}

bool ParseStubServer(std::string_view text, StubServer* server) {
  // A host name is kube-dns's IsDNS1123Subdomain of the whole entry, so never with a port.
  upstream::AddressSyntax syntax = upstream::kKubeDnsSyntax;
  syntax.is_host_name = IsDns1123Subdomain;
  const upstream::ParsedAddress parsed = upstream::ParseAddress(text, syntax);
  if (auto address = parsed.upstream()) {
    server->address = *address;
    return true;
  }
  if (!parsed.ok()) return false;
  auto host = dns::Name::FromText(text);
  if (!host) return false;
  server->address.reset();
  server->host = *host;
  return true;
}

bool ParseStubDomains(const std::string& text, std::vector<StubDomain>* out, std::string* error) {
  rapidjson::Document doc;
  if (!ParseJson(kStubDomainsKey, text, &doc, error)) return false;
  if (doc.IsNull()) return true;
  if (!doc.IsObject()) {
    *error = "stubDomains: not a JSON object of domain to list of nameservers";
    return false;
  }
  // Sorted by domain; a key repeated in the JSON text: the last one wins, as in Go.
  std::map<std::string, StubDomain> domains;
  for (const auto& member : doc.GetObject()) {
    std::string_view key(member.name.GetString(), member.name.GetStringLength());
    std::optional<dns::Name> domain;
    if (IsDns1123Subdomain(key)) domain = dns::Name::FromText(key);
    if (!domain) {
      *error = "stubDomains: invalid domain name " + Quote(key) +
               " (lower case DNS name without the trailing dot)";
      return false;
    }
    const std::string where = "stubDomains[" + Quote(key) + "]";
    StubDomain stub{*domain, {}};
    if (!member.value.IsNull()) {
      if (!member.value.IsArray()) {
        *error = where + ": not a list of nameservers";
        return false;
      }
      for (const auto& entry : member.value.GetArray()) {
        if (!entry.IsString()) {
          *error = where + ": not a list of nameservers";
          return false;
        }
        std::string_view ns(entry.GetString(), entry.GetStringLength());
        StubServer server;
        if (!ParseStubServer(ns, &server)) {
          *error = where + ": invalid nameserver " + Quote(ns) +
                   " (ip, ip:port, [ipv6]:port or a host name)";
          return false;
        }
        stub.servers.push_back(server);
      }
    }
    domains[std::string(key)] = std::move(stub);
  }
  out->clear();
  for (auto& [key, stub] : domains) out->push_back(std::move(stub));
  return true;
}

bool ParseUpstreams(const std::string& text, std::vector<upstream::Upstream>* out,
                    std::string* error) {
  rapidjson::Document doc;
  if (!ParseJson(kUpstreamNameserversKey, text, &doc, error)) return false;
  out->clear();
  if (doc.IsNull()) return true;
  if (!doc.IsArray()) {
    *error = "upstreamNameservers: not a JSON list of nameservers";
    return false;
  }
  if (doc.Size() > kMaxUpstreamNameservers) {
    *error = "upstreamNameservers: more than three entries (" + std::to_string(doc.Size()) + ")";
    return false;
  }
  for (const auto& entry : doc.GetArray()) {
    if (!entry.IsString()) {
      *error = "upstreamNameservers: not a list of strings";
      return false;
    }
    std::string_view ns(entry.GetString(), entry.GetStringLength());
    auto address = upstream::ParseUpstreamAddress(ns, upstream::kKubeDnsSyntax);
    if (!address) {
      *error = "upstreamNameservers: invalid nameserver " + Quote(ns) +
               " (an IP address with an optional port)";
      return false;
    }
    out->push_back(*address);
  }
  return true;
}

}  // namespace

bool ReadConfigDir(const std::string& dir, ConfigDirData* data, std::string* error) {
  int dir_error = 0;
  if (!IsDirectory(dir, &dir_error)) {
    *error = dir + ": cannot open: " + Errno(dir_error);
    return false;
  }
  for (int attempt = 0; attempt < kMaxReadAttempts; ++attempt) {
    int link_error = 0;
    std::optional<std::string> target = ReadDataLink(dir, &link_error);
    if (!target) {
      if (link_error != ENOENT && link_error != EINVAL) {
        *error = dir + "/" + kDataLink + ": " + Errno(link_error);
        return false;
      }
      // No `..data` symlink: plain files (EINVAL: `..data` is a real directory; read it).
      const std::string keys_dir = link_error == EINVAL ? dir + "/" + kDataLink : dir;
      std::string key_error;
      if (ReadKeys(keys_dir, data, &key_error)) return true;
      *error = keys_dir;
      *error += "/";
      *error += key_error;
      return false;
    }
    // Read the target by its own name, not through the link, so every key comes from it.
    const std::string target_dir = target->starts_with("/") ? *target : dir + "/" + *target;
    int target_error = 0;
    const bool exists = IsDirectory(target_dir, &target_error);
    std::string key_error;
    const bool read = exists && ReadKeys(target_dir, data, &key_error);
    std::optional<std::string> after = ReadDataLink(dir, &link_error);
    if (after && *after == *target) {
      // `..data` still points there: the kubelet removes a version only after the swap, so
      // the keys we read all belong to this one.
      if (read) return true;
      *error = target_dir;
      if (exists) {
        *error += "/";
        *error += key_error;
      } else {
        *error += ": cannot open: ";
        *error += Errno(target_error);
      }
      return false;
    }
    // Swapped while we read: start over with the new target.
  }
  *error = dir + ": " + kDataLink + " changed while reading, " + std::to_string(kMaxReadAttempts) +
           " times in a row";
  return false;
}

std::string StubServer::ToString() const {
  if (address) return upstream::FormatUpstreamAddress(*address);
  std::string text = host.ToText();
  if (text.size() > 1 && text.back() == '.') text.pop_back();
  return text;
}

std::string KubeDnsConfig::ToString() const {
  std::string out = "stubDomains: {";
  for (size_t i = 0; i < stub_domains.size(); ++i) {
    if (i > 0) out += ", ";
    out += stub_domains[i].domain.ToText() + "=[";
    for (size_t j = 0; j < stub_domains[i].servers.size(); ++j) {
      if (j > 0) out += ", ";
      out += stub_domains[i].servers[j].ToString();
    }
    out += "]";
  }
  out += "}; upstreamNameservers: [";
  for (size_t i = 0; i < upstream_nameservers.size(); ++i) {
    if (i > 0) out += ", ";
    out += upstream::FormatUpstreamAddress(upstream_nameservers[i]);
  }
  out += "]";
  if (!switches.empty()) out += "; " + switches.ToString();
  for (const auto& entry : route_options) {
    out += "; " + std::string(kRouteOptionsKey) + "[" +
           (entry.default_route ? std::string(".") : entry.domains.front().ToText()) +
           "]=" + entry.options.ToString();
  }
  return out;
}

namespace {

// kdns.routeOptions: {"domain" or ".": "option text"}; each domain one of `stubs`.
bool ParseRouteOptionsKey(const std::string& text, const std::vector<StubDomain>& stubs,
                          std::vector<upstream::RouteOptionsEntry>* out, std::string* error) {
  const std::string key_name(kRouteOptionsKey);
  rapidjson::Document doc;
  if (!ParseJson(kRouteOptionsKey, text, &doc, error)) return false;
  if (doc.IsNull()) return true;
  if (!doc.IsObject()) {
    *error = key_name + ": not a JSON object of route (a stubDomains key, or \".\") to options";
    return false;
  }
  std::map<std::string, upstream::RouteOptionsEntry> entries;  // sorted; "." first
  for (const auto& member : doc.GetObject()) {
    std::string_view key(member.name.GetString(), member.name.GetStringLength());
    const std::string where = key_name + "[" + Quote(key) + "]";
    upstream::RouteOptionsEntry entry;
    if (key == ".") {
      entry.default_route = true;
    } else {
      std::optional<dns::Name> domain;
      if (IsDns1123Subdomain(key)) domain = dns::Name::FromText(key);
      const bool is_stub = domain && std::any_of(stubs.begin(), stubs.end(), [&](const auto& s) {
                             return s.domain == *domain;
                           });
      if (!is_stub) {
        *error = where + ": not one of the stubDomains (or \".\" for the default upstreams)";
        return false;
      }
      entry.domains.push_back(domain->Lowercased());
    }
    if (!member.value.IsString()) {
      *error = where + ": not a string of options (force_tcp,policy=sequential,...)";
      return false;
    }
    std::string_view value(member.value.GetString(), member.value.GetStringLength());
    if (!upstream::ParseRouteOptions(value, &entry.options, error)) {
      *error = where + ": " + *error;
      return false;
    }
    entries[std::string(key)] = std::move(entry);
  }
  for (auto& [key, entry] : entries) out->push_back(std::move(entry));
  return true;
}

}  // namespace

bool ParseKubeDnsConfig(const ConfigDirData& data, KubeDnsConfig* config, std::string* error) {
  KubeDnsConfig result;
  if (data.stub_domains && !ParseStubDomains(*data.stub_domains, &result.stub_domains, error)) {
    return false;
  }
  if (data.upstream_nameservers &&
      !ParseUpstreams(*data.upstream_nameservers, &result.upstream_nameservers, error)) {
    return false;
  }
  if (!ParseRuntimeSwitches(data.log_queries, data.debug_data, &result.switches, error)) {
    return false;
  }
  if (data.route_options && !ParseRouteOptionsKey(*data.route_options, result.stub_domains,
                                                  &result.route_options, error)) {
    return false;
  }
  *config = std::move(result);
  return true;
}

bool LoadKubeDnsConfig(const std::string& dir, KubeDnsConfig* config, std::string* error) {
  ConfigDirData data;
  if (!ReadConfigDir(dir, &data, error)) return false;
  if (!ParseKubeDnsConfig(data, config, error)) {
    *error = dir + ": " + *error;
    return false;
  }
  return true;
}

bool IsDns1123Subdomain(std::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  size_t label_start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '.') {
      if (i == label_start) return false;  // empty label
      if (text[label_start] == '-' || text[i - 1] == '-') return false;
      label_start = i + 1;
      continue;
    }
    char c = text[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsDns1123Label(std::string_view text) {
  return text.size() <= 63 && text.find('.') == std::string_view::npos && IsDns1123Subdomain(text);
}

}  // namespace kdns::config

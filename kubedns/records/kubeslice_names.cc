#include "kubedns/records/kubeslice_names.h"

#include <algorithm>
#include <array>
#include <tuple>

#include "common/base/quote.h"
#include "common/config/kube_dns_config.h"
#include "common/limits/limits.h"
#include "kubedns/records/object_key.h"

namespace kdns::kubedns {
namespace {

// "a.b.c" → "c.b.a" (its own inverse).
std::string ReverseLabels(std::string_view text) {
  std::vector<std::string_view> labels;
  for (size_t start = 0;;) {
    const size_t dot = text.find('.', start);
    labels.push_back(text.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  std::string out;
  out.reserve(text.size());
  for (size_t i = labels.size(); i-- > 0;) {
    out.append(labels[i]);
    if (i != 0) out.push_back('.');
  }
  return out;
}

bool KeyLess(const KubesliceNames::Entry& entry, std::string_view key) { return entry.key < key; }

// Imports that claim names earlier come first (see the header's "Claim").
struct ClaimOrder {
  template <class Import>
  bool operator()(const Import* a, const Import* b) const {
    return std::make_tuple(!a->creation_unix_s.has_value(), a->creation_unix_s.value_or(0),
                           std::string_view(a->ns), std::string_view(a->name)) <
           std::make_tuple(!b->creation_unix_s.has_value(), b->creation_unix_s.value_or(0),
                           std::string_view(b->ns), std::string_view(b->name));
  }
};

std::string Describe(const k8s::KubesliceServiceImport& import) {
  return "kubeslice ServiceImport " + ObjectKey(import.meta.ns, import.meta.name);
}

}  // namespace

KubesliceNames::KubesliceNames(std::vector<Entry> entries) : entries_(std::move(entries)) {}

std::string KubesliceNames::KeyOfName(std::string_view name) { return ReverseLabels(name); }
std::string KubesliceNames::NameOfKey(std::string_view key) { return ReverseLabels(key); }

const std::vector<IpAddress>* KubesliceNames::Find(const dns::Name& lower) const {
  static const std::vector<IpAddress> kEmptyNonTerminal;
  // The key on the stack: a name has at most 255 octets, so its key at most 254 characters.
  std::array<char, dns::Name::kMaxWireLength + 1> buffer;
  size_t length = 0;
  for (size_t i = lower.label_count(); i-- > 0;) {
    const std::string_view label = lower.label(i);
    // A label with a dot in it ("a\.b") is no stored name's, and would read as two labels.
    if (label.find('.') != std::string_view::npos) return nullptr;
    if (length != 0) buffer[length++] = '.';
    std::copy(label.begin(), label.end(), buffer.data() + length);
    length += label.size();
  }
  const std::string_view key(buffer.data(), length);
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, KeyLess);
  if (it != entries_.end() && it->key == key) return it->ips.get();
  // An empty non-terminal: some key starts with this one and a dot.
  buffer[length] = '.';
  const std::string_view prefix(buffer.data(), length + 1);
  it = std::lower_bound(it, entries_.end(), prefix, KeyLess);
  if (it != entries_.end() && it->key.starts_with(prefix)) return &kEmptyNonTerminal;
  return nullptr;
}

std::optional<std::string> KubesliceNamesWriter::CheckedKey(
    const k8s::KubesliceServiceImport& import, std::string_view field,
    std::string_view name) const {
  const bool inside = name.size() > zone_.size() + 1 && name.ends_with(zone_) &&
                      name[name.size() - zone_.size() - 1] == '.';
  // IsDns1123Subdomain bounds the name (253 characters: 255 octets on the wire) and its
  // characters; Name::FromText bounds each label to 63 octets.
  if (inside && config::IsDns1123Subdomain(name) && dns::Name::FromText(name).has_value()) {
    return KubesliceNames::KeyOfName(name);
  }
  limits::RecordLimitHit(limits::Limit::kImportInvalid,
                         Describe(import) + ": " + std::string(field) + " " + QuoteForLog(name) +
                             " is not a DNS name inside " + zone_ + "; skipped");
  return std::nullopt;
}

std::optional<KubesliceNamesWriter::Import> KubesliceNamesWriter::Check(
    const k8s::KubesliceServiceImport& import) const {
  uint64_t name_bytes = import.dns_name.size();
  for (const auto& alias : import.aliases) name_bytes += alias.size();
  for (const auto& endpoint : import.endpoints) name_bytes += endpoint.dns_name.size();
  auto too_large = [&](std::string_view what, uint64_t count, std::string_view flag, uint64_t max) {
    limits::RecordLimitHit(limits::Limit::kImportTooLarge,
                           Describe(import) + ": " + std::to_string(count) + " " +
                               std::string(what) + ", over --" + std::string(flag) + "=" +
                               std::to_string(max) + "; not served");
    return std::nullopt;
  };
  if (import.aliases.size() > limits_.max_aliases) {
    return too_large("aliases", import.aliases.size(), "import-max-aliases", limits_.max_aliases);
  }
  if (import.endpoints.size() > limits_.max_endpoints) {
    return too_large("endpoints", import.endpoints.size(), "import-max-endpoints",
                     limits_.max_endpoints);
  }
  if (name_bytes > limits_.max_name_bytes) {
    return too_large("bytes of names", name_bytes, "import-max-bytes", limits_.max_name_bytes);
  }

  Import out{import.meta.ns, import.meta.name, import.creation_unix_s, {}, nullptr, {}, 0};
  std::vector<IpAddress> ips;
  for (const auto& endpoint : import.endpoints) {
    if (endpoint.ip) ips.push_back(*endpoint.ip);
  }
  out.endpoint_ips = ips.size();
  std::sort(ips.begin(), ips.end());
  ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
  out.ips = std::make_shared<const std::vector<IpAddress>>(std::move(ips));

  if (!import.dns_name.empty()) {
    if (auto key = CheckedKey(import, "spec.dnsName", import.dns_name)) {
      out.keys.push_back(std::move(*key));
    }
  }
  for (size_t i = 0; i < import.aliases.size(); ++i) {
    const std::string field = "spec.aliases[" + std::to_string(i) + "]";
    if (auto key = CheckedKey(import, field, import.aliases[i])) {
      out.keys.push_back(std::move(*key));
    }
  }
  std::sort(out.keys.begin(), out.keys.end());
  out.keys.erase(std::unique(out.keys.begin(), out.keys.end()), out.keys.end());
  for (size_t i = 0; i < import.endpoints.size(); ++i) {
    const k8s::KubesliceEndpoint& endpoint = import.endpoints[i];
    if (!endpoint.ip || endpoint.dns_name.empty()) continue;  // no record for it
    const std::string field = "status.endpoints[" + std::to_string(i) + "].dnsName";
    if (auto key = CheckedKey(import, field, endpoint.dns_name)) {
      out.endpoints.emplace_back(std::move(*key), *endpoint.ip);
    }
  }
  return out;
}

void KubesliceNamesWriter::Put(const k8s::KubesliceServiceImport& import) {
  if (zone_.empty()) return;  // the zone is off: nothing to keep
  const std::string key = ObjectKey(import.meta.ns, import.meta.name);
  std::optional<Import> checked = Check(import);
  if (!checked) {
    imports_.erase(key);
    return;
  }
  imports_.insert_or_assign(key, std::move(*checked));
}

void KubesliceNamesWriter::Upsert(const k8s::KubesliceServiceImport& import) {
  Put(import);
  Rebuild();
}

void KubesliceNamesWriter::Delete(std::string_view ns, std::string_view name) {
  if (imports_.erase(ObjectKey(ns, name)) != 0) Rebuild();
}

void KubesliceNamesWriter::Replace(const std::vector<k8s::KubesliceServiceImport>& imports) {
  imports_.clear();
  for (const auto& import : imports) Put(import);
  Rebuild();
}

void KubesliceNamesWriter::Rebuild() {
  std::vector<const Import*> order;
  order.reserve(imports_.size());
  endpoints_ = 0;
  for (const auto& [key, import] : imports_) {
    order.push_back(&import);
    endpoints_ += import.endpoint_ips;
  }
  std::sort(order.begin(), order.end(), ClaimOrder());

  struct Claim {
    const Import* owner;
    std::shared_ptr<const std::vector<IpAddress>> ips;
  };
  std::map<std::string_view, Claim> claims;  // by key, so already in the index's order
  std::set<std::pair<std::string, std::string>> conflicts;
  auto add = [&](const Import& import, std::string_view key,
                 const std::shared_ptr<const std::vector<IpAddress>>& ips) {
    auto [it, first] = claims.try_emplace(key, Claim{&import, ips});
    if (first) return;
    Claim& claim = it->second;
    if (claim.owner->ns != import.ns) {
      auto conflict = std::make_pair(ObjectKey(import.ns, import.name), std::string(key));
      if (!conflicts_.count(conflict)) {
        limits::RecordLimitHit(limits::Limit::kImportNameConflict,
                               "kubeslice ServiceImport " + conflict.first + ": " +
                                   QuoteForLog(KubesliceNames::NameOfKey(key)) +
                                   " belongs to namespace " + claim.owner->ns + " (" +
                                   ObjectKey(claim.owner->ns, claim.owner->name) +
                                   " named it first); not added");
      }
      conflicts.insert(std::move(conflict));
      return;
    }
    if (ips->empty() || claim.ips == ips) return;
    if (claim.ips->empty()) {
      claim.ips = ips;
      return;
    }
    // Several imports of one namespace name it: the union, built for this name only.
    std::vector<IpAddress> merged;
    std::set_union(claim.ips->begin(), claim.ips->end(), ips->begin(), ips->end(),
                   std::back_inserter(merged));
    claim.ips = std::make_shared<const std::vector<IpAddress>>(std::move(merged));
  };
  for (const Import* import : order) {
    for (const auto& key : import->keys) add(*import, key, import->ips);
    for (const auto& [key, ip] : import->endpoints) {
      add(*import, key, std::make_shared<const std::vector<IpAddress>>(1, ip));
    }
  }
  conflicts_ = std::move(conflicts);

  std::vector<KubesliceNames::Entry> entries;
  entries.reserve(claims.size());
  for (auto& [key, claim] : claims) {
    if (!claim.ips->empty()) entries.push_back({std::string(key), std::move(claim.ips)});
  }
  if (names_ != nullptr && names_->Holds(entries)) return;
  names_ = std::make_shared<const KubesliceNames>(std::move(entries));
}

bool KubesliceNames::Holds(const std::vector<Entry>& entries) const {
  return std::equal(
      entries_.begin(), entries_.end(), entries.begin(), entries.end(),
      [](const Entry& a, const Entry& b) { return a.key == b.key && *a.ips == *b.ips; });
}

}  // namespace kdns::kubedns

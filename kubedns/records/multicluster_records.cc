#include "kubedns/records/multicluster_records.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <unordered_set>

#include "common/base/quote.h"
#include "common/config/kube_dns_config.h"
#include "common/limits/limits.h"
#include "kubedns/records/object_key.h"

namespace kdns::kubedns {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; });
  return out;
}

bool Less(const McsImportRecords::Host& a, const McsImportRecords::Host& b) {
  return std::tie(a.cluster, a.label, a.ip) < std::tie(b.cluster, b.label, b.ip);
}

}  // namespace

McsSliceInfo McsSliceInfo::FromSlice(const k8s::EndpointSlice& slice) {
  McsSliceInfo info;
  info.cluster = Lower(slice.source_cluster);
  info.ports = slice.ports;
  if (slice.address_type == k8s::AddressType::kFqdn) return info;
  for (const auto& endpoint : slice.endpoints) {
    std::string hostname = Lower(endpoint.hostname);
    if (!hostname.empty() && !config::IsDns1123Label(hostname)) {
      limits::RecordLimitHit(limits::Limit::kImportInvalid,
                             "MCS EndpointSlice " + ObjectKey(slice.meta.ns, slice.meta.name) +
                                 ": hostname " + QuoteForLog(endpoint.hostname) +
                                 " is not a DNS label; named by its address instead");
      hostname.clear();
    }
    for (const auto& ip : endpoint.addresses) {
      info.addresses.push_back(Address{ip, endpoint.ready, hostname});
    }
  }
  return info;
}

bool McsSliceInfo::nameable() const { return config::IsDns1123Label(cluster); }

McsImportRecords::McsImportRecords(std::shared_ptr<const k8s::ServiceImport> import, Slices slices)
    : import_(std::move(import)), slices_(std::move(slices)) {
  std::sort(slices_.begin(), slices_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  if (import_ == nullptr) return;
  for (const auto& port : import_->ports) {
    if (port.name.empty()) continue;  // no SRV name for an unnamed port
    srv_.push_back(SrvSet{Lower(port.name), port.protocol, port.port});
  }
  if (!headless()) return;
  // Ready endpoints of every cluster. The same address twice in one cluster (a slice being
  // split) is one host; the same address in two clusters (overlapping pod networks) is two
  // names but one address of the bare name.
  for (const auto& [name, slice] : slices_) {
    if (!slice->nameable()) continue;
    for (const auto& address : slice->addresses) {
      if (!address.ready) continue;
      hosts_.push_back(Host{slice->cluster,
                            address.hostname.empty() ? address.ip.DashedName() : address.hostname,
                            address.ip});
    }
  }
  std::sort(hosts_.begin(), hosts_.end(), Less);
  hosts_.erase(std::unique(hosts_.begin(), hosts_.end(),
                           [](const Host& a, const Host& b) { return !Less(a, b) && !Less(b, a); }),
               hosts_.end());
  addresses_.reserve(hosts_.size());
  for (const auto& host : hosts_) addresses_.push_back(host.ip);
  std::sort(addresses_.begin(), addresses_.end());
  addresses_.erase(std::unique(addresses_.begin(), addresses_.end()), addresses_.end());

  // The target ports: every named port of every nameable slice, in slice-name order, so that
  // after a stable sort the last of each (cluster, name, protocol) is the one that counts.
  for (const auto& [name, slice] : slices_) {
    if (!slice->nameable()) continue;
    for (const auto& slice_port : slice->ports) {
      if (!slice_port.port || slice_port.name.empty()) continue;
      cluster_ports_.push_back(ClusterPort{slice->cluster, Lower(slice_port.name),
                                           slice_port.protocol, *slice_port.port});
    }
  }
  auto key = [](const ClusterPort& p) { return std::tie(p.cluster, p.name, p.protocol); };
  std::stable_sort(cluster_ports_.begin(), cluster_ports_.end(),
                   [&](const ClusterPort& a, const ClusterPort& b) { return key(a) < key(b); });
  std::vector<ClusterPort> last;
  last.reserve(cluster_ports_.size());
  for (size_t i = 0; i < cluster_ports_.size(); ++i) {
    if (i + 1 < cluster_ports_.size() && key(cluster_ports_[i]) == key(cluster_ports_[i + 1])) {
      continue;
    }
    last.push_back(std::move(cluster_ports_[i]));
  }
  cluster_ports_ = std::move(last);
}

uint16_t McsImportRecords::TargetPort(const SrvSet& set, std::string_view cluster) const {
  const auto wanted = std::tie(cluster, set.port_name, set.protocol);
  auto it = std::lower_bound(cluster_ports_.begin(), cluster_ports_.end(), wanted,
                             [](const ClusterPort& p, const auto& key) {
                               return std::tie(p.cluster, p.name, p.protocol) < key;
                             });
  if (it != cluster_ports_.end() && std::tie(it->cluster, it->name, it->protocol) == wanted) {
    return it->port;
  }
  return set.port;
}

std::span<const McsImportRecords::Host> McsImportRecords::FindHosts(std::string_view cluster,
                                                                    std::string_view label) const {
  auto lower = std::lower_bound(hosts_.begin(), hosts_.end(), std::make_pair(cluster, label),
                                [](const Host& host, const auto& key) {
                                  std::string_view host_cluster = host.cluster;
                                  std::string_view host_label = host.label;
                                  return std::tie(host_cluster, host_label) <
                                         std::tie(key.first, key.second);
                                });
  auto upper = lower;
  while (upper != hosts_.end() && upper->cluster == cluster && upper->label == label) ++upper;
  return {lower, upper};
}

bool McsImportRecords::HasCluster(std::string_view cluster) const {
  auto it =
      std::lower_bound(hosts_.begin(), hosts_.end(), cluster,
                       [](const Host& host, std::string_view key) { return host.cluster < key; });
  return it != hosts_.end() && it->cluster == cluster;
}

const McsImportRecords::SrvSet* McsImportRecords::FindSrv(std::string_view port_name,
                                                          std::string_view protocol) const {
  for (const auto& set : srv_) {
    if (set.port_name == port_name && Lower(k8s::ToString(set.protocol)) == protocol) return &set;
  }
  return nullptr;
}

bool McsImportRecords::HasSrvProtocol(std::string_view protocol) const {
  return std::any_of(srv_.begin(), srv_.end(), [&](const SrvSet& set) {
    return Lower(k8s::ToString(set.protocol)) == protocol;
  });
}

uint64_t McsImportRecords::address_count() const {
  uint64_t count = 0;
  for (const auto& [name, slice] : slices_) count += slice->addresses.size();
  return count;
}

const McsImportRecords* MulticlusterSnapshot::FindImport(std::string_view ns,
                                                         std::string_view name) const {
  // A queried label is at most 63 bytes: the key fits on the stack.
  std::array<char, 63 * 2 + 1> key;
  if (ns.size() > 63 || name.size() > 63) return nullptr;
  char* end = std::copy(ns.begin(), ns.end(), key.data());
  *end++ = '/';
  end = std::copy(name.begin(), name.end(), end);
  const auto* records = imports_.Find(std::string_view(key.data(), end - key.data()));
  return records == nullptr ? nullptr : records->get();
}

bool MulticlusterSnapshot::HasImportNamespace(std::string_view ns) const {
  return namespaces_.Find(ns) != nullptr;
}

void MulticlusterWriter::Rebuild(const std::string& ns, const std::string& name) {
  const std::string key = ObjectKey(ns, name);
  std::shared_ptr<const k8s::ServiceImport> import;
  if (auto it = imports_.find(key); it != imports_.end()) import = it->second;
  McsImportRecords::Slices slices;
  for (auto it = slices_.lower_bound(ns + "/"); it != slices_.end(); ++it) {
    if (it->first.compare(0, ns.size() + 1, ns + "/") != 0) break;
    if (slice_import_[it->first] == name) {
      slices.emplace_back(it->first.substr(ns.size() + 1), it->second);
    }
  }
  if (import != nullptr) {
    uint64_t addresses = 0;
    for (const auto& [slice_name, slice] : slices) addresses += slice->addresses.size();
    if (addresses > limits_.max_endpoints) {
      limits::RecordLimitHit(limits::Limit::kImportTooLarge,
                             "MCS ServiceImport " + key + ": " + std::to_string(addresses) +
                                 " endpoint addresses, over --import-max-endpoints=" +
                                 std::to_string(limits_.max_endpoints) + "; not served");
      import = nullptr;  // kept, answering nothing, until its slices shrink
    }
  }
  MulticlusterSnapshot& s = snapshot_;
  if (const auto* old = s.imports_.Find(key)) {
    s.stats_.mcs_endpoints -= (*old)->address_count();
    if ((*old)->answerable()) {
      --s.stats_.mcs_imports;
      const uint32_t* count = s.namespaces_.Find(ns);
      s.namespaces_ = *count == 1 ? s.namespaces_.Erase(ns) : s.namespaces_.Set(ns, *count - 1);
    }
  }
  if (import == nullptr && slices.empty()) {
    s.imports_ = s.imports_.Erase(key);
    return;
  }
  auto records = std::make_shared<const McsImportRecords>(std::move(import), std::move(slices));
  s.stats_.mcs_endpoints += records->address_count();
  if (records->answerable()) {
    ++s.stats_.mcs_imports;
    const uint32_t* count = s.namespaces_.Find(ns);
    s.namespaces_ = s.namespaces_.Set(ns, count == nullptr ? 1 : *count + 1);
  }
  s.imports_ = s.imports_.Set(key, std::move(records));
}

void MulticlusterWriter::UpsertServiceImport(const k8s::ServiceImport& import) {
  const std::string key = ObjectKey(import.meta.ns, import.meta.name);
  // Its name and namespace are two labels of svc.ns.svc.<zone>. The API server checks a
  // namespace, but a custom resource's name only as a DNS subdomain ("a.b" passes).
  if (!config::IsDns1123Label(import.meta.ns) || !config::IsDns1123Label(import.meta.name)) {
    limits::RecordLimitHit(limits::Limit::kImportInvalid,
                           "MCS ServiceImport " + QuoteForLog(key) +
                               ": its name and namespace are not DNS labels; not served");
    DeleteServiceImport(import.meta.ns, import.meta.name);
    return;
  }
  auto it = imports_.find(key);
  if (it != imports_.end() && it->second->type == import.type && it->second->ips == import.ips &&
      it->second->ports == import.ports) {
    return;  // only metadata changed
  }
  imports_[key] = std::make_shared<const k8s::ServiceImport>(import);
  Rebuild(import.meta.ns, import.meta.name);
}

void MulticlusterWriter::DeleteServiceImport(std::string_view ns, std::string_view name) {
  if (imports_.erase(ObjectKey(ns, name)) == 0) return;
  Rebuild(std::string(ns), std::string(name));
}

void MulticlusterWriter::ReplaceServiceImports(const std::vector<k8s::ServiceImport>& imports) {
  std::unordered_set<std::string> wanted;
  for (const auto& import : imports) wanted.insert(ObjectKey(import.meta.ns, import.meta.name));
  std::vector<std::pair<std::string, std::string>> gone;
  for (const auto& [key, import] : imports_) {
    if (!wanted.count(key)) gone.emplace_back(import->meta.ns, import->meta.name);
  }
  for (const auto& [ns, name] : gone) DeleteServiceImport(ns, name);
  for (const auto& import : imports) UpsertServiceImport(import);
}

void MulticlusterWriter::UpsertSlice(const k8s::EndpointSlice& slice) {
  const std::string key = ObjectKey(slice.meta.ns, slice.meta.name);
  auto owner = slice_import_.find(key);
  std::string old_import = owner == slice_import_.end() ? std::string() : owner->second;
  if (slice.multicluster_service_name.empty()) {
    DeleteSlice(slice.meta.ns, slice.meta.name);  // the label was removed
    return;
  }
  auto info = std::make_shared<const McsSliceInfo>(McsSliceInfo::FromSlice(slice));
  if (auto it = slices_.find(key); it != slices_.end() &&
                                   old_import == slice.multicluster_service_name &&
                                   *it->second == *info) {
    return;
  }
  auto& stored = slices_[key];
  if (stored != nullptr && !stored->nameable()) --snapshot_.stats_.unnamed_slices;
  if (!info->nameable()) ++snapshot_.stats_.unnamed_slices;
  stored = std::move(info);
  slice_import_[key] = slice.multicluster_service_name;
  if (!old_import.empty() && old_import != slice.multicluster_service_name) {
    Rebuild(slice.meta.ns, old_import);  // moved away
  }
  Rebuild(slice.meta.ns, slice.multicluster_service_name);
}

void MulticlusterWriter::DeleteSlice(std::string_view ns, std::string_view name) {
  const std::string key = ObjectKey(ns, name);
  auto owner = slice_import_.find(key);
  if (owner == slice_import_.end()) return;
  const std::string import = owner->second;
  if (!slices_[key]->nameable()) --snapshot_.stats_.unnamed_slices;
  slice_import_.erase(owner);
  slices_.erase(key);
  Rebuild(std::string(ns), import);
}

void MulticlusterWriter::ReplaceSlices(const std::vector<k8s::EndpointSlice>& slices) {
  std::unordered_set<std::string> wanted;
  for (const auto& slice : slices) {
    if (!slice.multicluster_service_name.empty())
      wanted.insert(ObjectKey(slice.meta.ns, slice.meta.name));
  }
  std::vector<std::string> gone;
  for (const auto& [key, import] : slice_import_) {
    if (!wanted.count(key)) gone.push_back(key);
  }
  for (const auto& key : gone) {
    size_t slash = key.find('/');
    DeleteSlice(key.substr(0, slash), key.substr(slash + 1));
  }
  for (const auto& slice : slices) {
    if (!slice.multicluster_service_name.empty()) UpsertSlice(slice);
  }
}

void MulticlusterWriter::UpsertKubesliceServiceImport(const k8s::KubesliceServiceImport& import) {
  kubeslice_.Upsert(import);
  PublishKubeslice();
}

void MulticlusterWriter::DeleteKubesliceServiceImport(std::string_view ns, std::string_view name) {
  kubeslice_.Delete(ns, name);
  PublishKubeslice();
}

void MulticlusterWriter::ReplaceKubesliceServiceImports(
    const std::vector<k8s::KubesliceServiceImport>& imports) {
  kubeslice_.Replace(imports);
  PublishKubeslice();
}

void MulticlusterWriter::PublishKubeslice() {
  snapshot_.kubeslice_names_ = kubeslice_.names();
  snapshot_.stats_.kubeslice_imports = kubeslice_.imports();
  snapshot_.stats_.kubeslice_endpoints = kubeslice_.endpoints();
}

}  // namespace kdns::kubedns

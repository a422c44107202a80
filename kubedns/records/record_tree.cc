#include "kubedns/records/record_tree.h"

#include <glog/logging.h>

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "common/base/heap.h"
#include "kubedns/records/object_key.h"

namespace kdns::kubedns {

namespace {

// The pod index key: the namespace, '/', then the address's 4 or 16 network-order bytes (the
// length tells the family). Written into `out`, which must hold ns.size() + 17 bytes;
// returns the key's length.
size_t WritePodIpKey(std::string_view ns, const IpAddress& ip, char* out) {
  auto bytes = ip.bytes();
  char* end = std::copy(ns.begin(), ns.end(), out);
  *end++ = '/';
  end = std::copy(bytes.begin(), bytes.end(), end);
  return static_cast<size_t>(end - out);
}

std::string PodIpKey(std::string_view ns, const IpAddress& ip) {
  std::string key(ns.size() + 17, '\0');
  key.resize(WritePodIpKey(ns, ip, key.data()));
  return key;
}

bool PodIsLive(const k8s::Pod& pod) {
  return pod.phase != k8s::PodPhase::kSucceeded && pod.phase != k8s::PodPhase::kFailed;
}

// The IPs a service's records contribute to the reverse index, sorted and distinct: its
// cluster IPs, or its headless hosts' addresses.
std::vector<IpAddress> ReverseKeys(const ServiceRecords& records) {
  std::vector<IpAddress> keys;
  const ServiceInfo* service = records.service();
  if (service == nullptr) return keys;
  if (service->kind == ServiceInfo::Kind::kClusterIP) {
    keys = service->cluster_ips;
  } else if (service->kind == ServiceInfo::Kind::kHeadless) {
    keys.reserve(records.hosts().size());
    for (const auto& host : records.hosts()) keys.push_back(host.ip);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

// The IPs a service is reached at from outside (ServiceInfo::external: externalIPs and load
// balancer ingress IPs), sorted and distinct: its keys in the external reverse index.
std::vector<IpAddress> ExternalReverseKeys(const ServiceRecords& records) {
  std::vector<IpAddress> keys;
  const ServiceInfo* service = records.service();
  if (service == nullptr || service->external == nullptr) return keys;
  keys = service->external->ips;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

bool NameLess(const ServiceName& a, const ServiceName& b) {
  return a.ns != b.ns ? a.ns < b.ns : a.name < b.name;
}

using Owners = std::vector<std::shared_ptr<const ServiceName>>;

// Rebuilds an owner chain from `owners` (sorted by NameLess). A node whose `also` is already
// right (the last one, when it ends a chain) is reused, so the common single-owner entry is
// the service's own ServiceName and costs no allocation.
std::shared_ptr<const ServiceName> Chain(const Owners& owners) {
  std::shared_ptr<const ServiceName> next;
  for (auto it = owners.rbegin(); it != owners.rend(); ++it) {
    if ((*it)->also == next) {
      next = *it;
    } else {
      next = std::make_shared<const ServiceName>(ServiceName{(*it)->ns, (*it)->name, next});
    }
  }
  return next;
}

Owners OwnersOf(const std::shared_ptr<const ServiceName>* chain) {
  Owners owners;
  for (auto node = chain == nullptr ? nullptr : *chain; node != nullptr; node = node->also) {
    owners.push_back(node);
  }
  return owners;
}

// `chain` (may be null) with `name` added in (ns, name) order.
std::shared_ptr<const ServiceName> ChainWith(const std::shared_ptr<const ServiceName>* chain,
                                             const std::shared_ptr<const ServiceName>& name) {
  if (chain == nullptr || *chain == nullptr) return name;
  Owners owners = OwnersOf(chain);
  owners.insert(std::upper_bound(owners.begin(), owners.end(), name,
                                 [](const auto& a, const auto& b) { return NameLess(*a, *b); }),
                name);
  return Chain(owners);
}

// `chain` without `name`; null when none is left.
std::shared_ptr<const ServiceName> ChainWithout(const std::shared_ptr<const ServiceName>* chain,
                                                const ServiceName& name) {
  Owners owners = OwnersOf(chain);
  owners.erase(std::remove_if(owners.begin(), owners.end(),
                              [&](const auto& owner) {
                                return owner->ns == name.ns && owner->name == name.name;
                              }),
               owners.end());
  return Chain(owners);
}

// The value of `key` in a writer-side index, or null.
template <class Map>
const typename Map::mapped_type* FindIn(const Map& map, const std::string& key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

// What one reverse index entry costs: its trie slot (hash, key, value, variant tag).
constexpr uint64_t kReverseEntryBytes =
    sizeof(uint64_t) + sizeof(IpAddress) + sizeof(std::shared_ptr<const ServiceName>) + 8;

}  // namespace

const ServiceRecords* Snapshot::FindService(std::string_view ns, std::string_view name) const {
  const auto* space = namespaces_.Find(ns);
  if (space == nullptr) return nullptr;
  const auto* records = (*space)->services.Find(name);
  return records == nullptr ? nullptr : records->get();
}

bool Snapshot::HasNamespace(std::string_view ns) const {
  const auto* space = namespaces_.Find(ns);
  return space != nullptr && (*space)->answerable > 0;
}

std::string_view PtrRelativeName(std::string_view label, const ServiceName& owner,
                                 std::span<char> buffer) {
  const size_t size =
      (label.empty() ? 0 : label.size() + 1) + owner.name.size() + 1 + owner.ns.size();
  if (size > buffer.size()) return {};
  char* out = buffer.data();
  if (!label.empty()) {
    out = std::copy(label.begin(), label.end(), out);
    *out++ = '.';
  }
  out = std::copy(owner.name.begin(), owner.name.end(), out);
  *out++ = '.';
  std::copy(owner.ns.begin(), owner.ns.end(), out);
  return std::string_view(buffer.data(), size);
}

bool Snapshot::HasPodIp(std::string_view ns, const IpAddress& ip) const {
  // A queried namespace is one DNS label, at most 63 bytes.
  std::array<char, 63 + 17> key;
  if (ns.size() > 63) return false;
  size_t size = WritePodIpKey(ns, ip, key.data());
  return pod_ips_.Find(std::string_view(key.data(), size)) != nullptr;
}

const ServiceRecords* RecordTreeWriter::Find(const std::string& ns, const std::string& name) const {
  const auto* space = namespaces_.Find(ns);
  if (space == nullptr) return nullptr;
  const auto* records = (*space)->services.Find(name);
  return records == nullptr ? nullptr : records->get();
}

namespace {

// Applies to `index` only the difference between the keys `old` and `records` contribute, so
// an endpoint change in a large headless service touches only that endpoint's entries.
template <class Keys>
void UpdateReverse(Snapshot::Reverse& index, const ServiceRecords* old,
                   const ServiceRecords* records, Keys keys_of) {
  std::vector<IpAddress> before, after, removed, added;
  if (old != nullptr) before = keys_of(*old);
  if (records != nullptr) after = keys_of(*records);
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                      std::back_inserter(removed));
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  for (const auto& ip : removed) {
    const auto* owners = index.Find(ip);
    if (owners == nullptr) continue;
    auto left = ChainWithout(owners, old->name());
    index = left != nullptr ? index.Set(ip, std::move(left)) : index.Erase(ip);
  }
  for (const auto& ip : added) {
    index = index.Set(ip, ChainWith(index.Find(ip), records->shared_name()));
  }
}

}  // namespace

void RecordTreeWriter::Store(const std::string& ns, const std::string& name, ServicePtr records) {
  const ServiceRecords* old = Find(ns, name);
  // A host whose label changed keeps its reverse entry: the PTR target is derived from the
  // records when asked.
  UpdateReverse(reverse_, old, records.get(), ReverseKeys);
  UpdateReverse(external_reverse_, old, records.get(), ExternalReverseKeys);
  stats_.reverse_entries = reverse_.size() + external_reverse_.size();

  Snapshot::Namespace space;
  if (const auto* existing = namespaces_.Find(ns)) space = **existing;
  if (old != nullptr) {
    stats_.endpoints -= old->address_count();
    stats_.records_bytes -= old->ModelBytes();
    if (old->answerable()) {
      --space.answerable;
      --stats_.services;
    }
  }
  if (records != nullptr) {
    stats_.endpoints += records->address_count();
    stats_.records_bytes += records->ModelBytes();
    unpublished_bytes_ += records->ModelBytes();
    if (records->answerable()) {
      ++space.answerable;
      ++stats_.services;
    }
    space.services = space.services.Set(name, std::move(records));
  } else {
    space.services = space.services.Erase(name);
  }
  if (space.services.empty()) {
    namespaces_ = namespaces_.Erase(ns);
  } else {
    namespaces_ =
        namespaces_.Set(ns, std::make_shared<const Snapshot::Namespace>(std::move(space)));
  }
}

void RecordTreeWriter::UpsertService(const k8s::Service& service) {
  Listed(ListKind::kServices, ObjectKey(service.meta.ns, service.meta.name));
  auto info = std::make_shared<const ServiceInfo>(ServiceInfo::FromService(service));
  const ServiceRecords* old = Find(service.meta.ns, service.meta.name);
  if (old != nullptr && old->service() != nullptr && *old->service() == *info) {
    return;  // unchanged (a re-LIST, or a change of fields DNS does not use)
  }
  Store(service.meta.ns, service.meta.name,
        old != nullptr
            ? old->WithService(std::move(info))
            : std::make_shared<const ServiceRecords>(NameOf(service.meta.ns, service.meta.name),
                                                     std::move(info), ServiceRecords::Slices{}));
}

void RecordTreeWriter::DeleteService(std::string_view ns_view, std::string_view name_view) {
  std::string ns(ns_view), name(name_view);
  Listed(ListKind::kServices, ObjectKey(ns, name));
  const ServiceRecords* old = Find(ns, name);
  if (old == nullptr || old->service() == nullptr) return;
  // Its slices stay (they are deleted by their own events) until the service comes back.
  Store(ns, name, old->slices().empty() ? nullptr : old->WithService(nullptr));
}

void RecordTreeWriter::SetSlice(const std::string& ns, const std::string& service,
                                const std::string& slice, std::shared_ptr<const SliceInfo> info) {
  const ServiceRecords* old = Find(ns, service);
  if (old == nullptr) {
    if (info == nullptr) return;
    ServiceRecords::Slices slices;
    slices.emplace_back(slice, std::move(info));
    Store(ns, service,
          std::make_shared<const ServiceRecords>(NameOf(ns, service), nullptr, std::move(slices)));
    return;
  }
  auto updated = old->WithSlice(slice, std::move(info));
  if (!updated->answerable() && updated->slices().empty()) {
    Store(ns, service, nullptr);
  } else {
    Store(ns, service, std::move(updated));
  }
}

void RecordTreeWriter::UpsertSlice(const k8s::EndpointSlice& slice) {
  std::string key = ObjectKey(slice.meta.ns, slice.meta.name);
  Listed(ListKind::kSlices, key);
  const std::string* owner = FindIn(slice_owner_, key);
  if (owner != nullptr && *owner != slice.service_name) {
    SetSlice(slice.meta.ns, *owner, slice.meta.name, nullptr);  // moved away
  }
  if (slice.service_name.empty()) {
    slice_owner_.erase(key);
    return;
  }
  auto info = std::make_shared<const SliceInfo>(SliceInfo::FromSlice(slice, zones_));
  if (owner != nullptr && *owner == slice.service_name) {
    const ServiceRecords* records = Find(slice.meta.ns, slice.service_name);
    if (records != nullptr) {
      auto it = std::find_if(records->slices().begin(), records->slices().end(),
                             [&](const auto& entry) { return entry.first == slice.meta.name; });
      if (it != records->slices().end() && *it->second == *info) return;  // unchanged
    }
  }
  // Only a new owner is written: an unchanged entry is left as it is.
  if (owner == nullptr || *owner != slice.service_name)
    slice_owner_.insert_or_assign(key, slice.service_name);
  SetSlice(slice.meta.ns, slice.service_name, slice.meta.name, std::move(info));
}

void RecordTreeWriter::DeleteSlice(std::string_view ns, std::string_view name) {
  std::string key = ObjectKey(ns, name);
  Listed(ListKind::kSlices, key);
  const std::string* owner = FindIn(slice_owner_, key);
  if (owner == nullptr) return;
  const std::string service = *owner;
  slice_owner_.erase(key);
  SetSlice(std::string(ns), service, std::string(name), nullptr);
}

void RecordTreeWriter::UpsertEndpoints(const k8s::Endpoints& endpoints) {
  std::string key = ObjectKey(endpoints.meta.ns, endpoints.meta.name);
  Listed(ListKind::kEndpoints, key);
  std::vector<std::string> names;
  names.reserve(endpoints.slices.size());
  for (const auto& slice : endpoints.slices) names.push_back(slice.meta.name);
  // Remove the derived slices the object no longer has, then upsert the rest: unchanged
  // subsets keep their records.
  if (const auto* before = FindIn(endpoints_slices_, key)) {
    for (const auto& old : *before) {
      if (std::find(names.begin(), names.end(), old) == names.end()) {
        DeleteSlice(endpoints.meta.ns, old);
      }
    }
  }
  for (const auto& slice : endpoints.slices) UpsertSlice(slice);
  const auto* before = FindIn(endpoints_slices_, key);
  if (names.empty()) {
    endpoints_slices_.erase(key);
  } else if (before == nullptr || *before != names) {
    endpoints_slices_.insert_or_assign(key, std::move(names));
  }
}

void RecordTreeWriter::DeleteEndpoints(std::string_view ns, std::string_view name) {
  std::string key = ObjectKey(ns, name);
  Listed(ListKind::kEndpoints, key);
  const auto* slices = FindIn(endpoints_slices_, key);
  if (slices == nullptr) return;
  const std::vector<std::string> names = *slices;
  endpoints_slices_.erase(key);
  for (const auto& slice : names) DeleteSlice(ns, slice);
}

void RecordTreeWriter::CountPodIp(const std::string& ns, const IpAddress& ip, int delta) {
  std::string key = PodIpKey(ns, ip);
  const uint32_t* count = pod_ips_.Find(key);
  const uint32_t now = (count == nullptr ? 0 : *count) + delta;
  if (now == 0) {
    pod_ips_ = pod_ips_.Erase(key);
  } else {
    pod_ips_ = pod_ips_.Set(std::move(key), now);
  }
  stats_.pod_ips = pod_ips_.size();
}

void RecordTreeWriter::UpsertPod(const k8s::Pod& pod) {
  std::vector<IpAddress> ips;
  if (PodIsLive(pod)) {
    ips = pod.pod_ips;
    std::sort(ips.begin(), ips.end());
    ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
  }
  std::string key = ObjectKey(pod.meta.ns, pod.meta.name);
  Listed(ListKind::kPods, key);
  const std::vector<IpAddress>* before = FindIn(pods_, key);
  if (before != nullptr && *before == ips) return;  // the common status-only update
  // Count the new IPs before dropping the old ones, so an IP both have never reaches zero.
  for (const auto& ip : ips) CountPodIp(pod.meta.ns, ip, +1);
  if (before != nullptr) {
    for (const auto& ip : *before) CountPodIp(pod.meta.ns, ip, -1);
  }
  if (ips.empty()) {
    pods_.erase(key);
  } else {
    pods_.insert_or_assign(key, std::move(ips));
  }
}

void RecordTreeWriter::DeletePod(std::string_view ns, std::string_view name) {
  std::string key = ObjectKey(ns, name);
  Listed(ListKind::kPods, key);
  const std::vector<IpAddress>* ips = FindIn(pods_, key);
  if (ips == nullptr) return;
  const std::string ns_string(ns);
  for (const auto& ip : *ips) CountPodIp(ns_string, ip, -1);
  pods_.erase(key);
}

void RecordTreeWriter::ReplaceAll(const ObjectSet& objects) {
  CHECK(!loading()) << "ReplaceAll inside a load";
  multicluster_.ReplaceServiceImports(objects.service_imports);
  multicluster_.ReplaceSlices(objects.slices);
  multicluster_.ReplaceKubesliceServiceImports(objects.kubeslice_service_imports);
  if (!namespaces_.empty() || !slice_owner_.empty()) {
    // A reload over a tree: apply the difference. Unchanged services keep their records,
    // so memory is not churned (and fragmented) by a second copy of the whole tree.
    ReplaceServices(objects.services);
    ReplaceSlices(objects.slices);
    ReplaceEndpoints(objects.endpoints);
    return;
  }
  // Group everything by namespace/service, then build each level in one pass.
  struct Pending {
    std::shared_ptr<const ServiceInfo> service;
    ServiceRecords::Slices slices;
  };
  std::map<std::pair<std::string, std::string>, Pending> pending;
  for (const auto& service : objects.services) {
    pending[{service.meta.ns, service.meta.name}].service =
        std::make_shared<const ServiceInfo>(ServiceInfo::FromService(service));
  }
  slice_owner_.clear();
  endpoints_slices_.clear();
  // v1 Endpoints object → the names of the slices derived from it.
  std::unordered_map<std::string, std::vector<std::string>> derived;
  auto add_slice = [&](const k8s::EndpointSlice& slice) {
    if (slice.service_name.empty()) return;
    slice_owner_.insert_or_assign(ObjectKey(slice.meta.ns, slice.meta.name), slice.service_name);
    pending[{slice.meta.ns, slice.service_name}].slices.emplace_back(
        slice.meta.name, std::make_shared<const SliceInfo>(SliceInfo::FromSlice(slice, zones_)));
  };
  for (const auto& slice : objects.slices) add_slice(slice);
  for (const auto& endpoints : objects.endpoints) {
    auto& names = derived[ObjectKey(endpoints.meta.ns, endpoints.meta.name)];
    for (const auto& slice : endpoints.slices) {
      add_slice(slice);
      names.push_back(slice.meta.name);
    }
  }
  for (auto& [key, names] : derived) endpoints_slices_.insert_or_assign(key, std::move(names));

  stats_ = {};
  std::vector<std::pair<std::string, std::shared_ptr<const Snapshot::Namespace>>> spaces;
  using ReverseEntries =
      std::unordered_map<IpAddress, std::shared_ptr<const ServiceName>, IpAddressHash>;
  ReverseEntries reverse;
  ReverseEntries external_reverse;
  std::vector<std::pair<std::string, ServicePtr>> services;
  uint32_t answerable = 0;
  auto flush_namespace = [&](const std::string& ns) {
    auto space = std::make_shared<Snapshot::Namespace>();
    space->services = Snapshot::Services::FromEntries(std::move(services));
    space->answerable = answerable;
    spaces.emplace_back(ns, std::move(space));
    services.clear();
    answerable = 0;
  };
  std::string current_ns;
  for (auto& [key, entry] : pending) {
    const auto& [ns, name] = key;
    if (!services.empty() && ns != current_ns) flush_namespace(current_ns);
    current_ns = ns;
    auto records = std::make_shared<const ServiceRecords>(
        std::make_shared<const ServiceName>(ServiceName{ns, name, nullptr}),
        std::move(entry.service), std::move(entry.slices));
    stats_.endpoints += records->address_count();
    stats_.records_bytes += records->ModelBytes();
    unpublished_bytes_ += records->ModelBytes();
    if (records->answerable()) {
      ++answerable;
      ++stats_.services;
    }
    for (const auto& ip : ReverseKeys(*records)) {
      auto& owners = reverse[ip];
      owners = ChainWith(&owners, records->shared_name());
    }
    for (const auto& ip : ExternalReverseKeys(*records)) {
      auto& owners = external_reverse[ip];
      owners = ChainWith(&owners, records->shared_name());
    }
    services.emplace_back(name, std::move(records));
  }
  if (!services.empty()) flush_namespace(current_ns);
  namespaces_ = Snapshot::Namespaces::FromEntries(std::move(spaces));
  auto index_of = [](ReverseEntries& entries) {
    std::vector<std::pair<IpAddress, std::shared_ptr<const ServiceName>>> sorted(
        std::make_move_iterator(entries.begin()), std::make_move_iterator(entries.end()));
    return Snapshot::Reverse::FromEntries(std::move(sorted));
  };
  reverse_ = index_of(reverse);
  external_reverse_ = index_of(external_reverse);
  stats_.reverse_entries = reverse_.size() + external_reverse_.size();
}

std::shared_ptr<const ServiceName> RecordTreeWriter::NameOf(const std::string& ns,
                                                            const std::string& name) const {
  if (const ServiceRecords* records = Find(ns, name)) return records->shared_name();
  return std::make_shared<const ServiceName>(ServiceName{ns, name, nullptr});
}

std::shared_ptr<const Snapshot> RecordTreeWriter::Publish() {
  // Not make_shared: the heap is released after the snapshot's memory is, which a control
  // block sharing its allocation would hold until the last weak reference went.
  std::shared_ptr<Snapshot> snapshot(new Snapshot(), [](const Snapshot* gone) {
    const bool release = gone->release_heap_when_freed_.load();
    delete gone;
    if (release) ReleaseFreeHeap();
  });
  snapshot->namespaces_ = namespaces_;
  snapshot->reverse_ = reverse_;
  snapshot->external_reverse_ = external_reverse_;
  snapshot->pod_ips_ = pod_ips_;
  snapshot->multicluster_ = multicluster_.snapshot();
  snapshot->generation_ = ++generation_;
  unpublished_bytes_ = 0;
  snapshot->synced_ = synced_;
  // Comparing roots costs nothing and errs only one way: an operation that rebuilt a map
  // to hold what it held before bumps the version once (a cache drops negatives it could
  // have kept), never the reverse.
  const bool unchanged = published_ != nullptr &&
                         namespaces_.SharesRootWith(published_->namespaces_) &&
                         reverse_.SharesRootWith(published_->reverse_) &&
                         external_reverse_.SharesRootWith(published_->external_reverse_) &&
                         pod_ips_.SharesRootWith(published_->pod_ips_) &&
                         snapshot->multicluster_.SameRecordsAs(published_->multicluster_) &&
                         synced_ == published_->synced_;
  snapshot->records_version_ =
      published_ == nullptr ? 1 : published_->records_version_ + (unchanged ? 0 : 1);
  snapshot->stats_ = stats_;
  snapshot->stats_.records_bytes += stats_.reverse_entries * kReverseEntryBytes;
  published_ = snapshot;
  return snapshot;
}

}  // namespace kdns::kubedns

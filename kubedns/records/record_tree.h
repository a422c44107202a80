// The record tree: what kubedns answers from, as immutable snapshots.
//
// Shape (reversed labels under the cluster domain Z):
//   Z ─ svc ─ <namespace> ─ <service> ─ ServiceRecords (hosts, SRV sets, cluster IPs)
//   reverse index: IP → the services that have it (cluster IPs and headless endpoints); the
//     PTR target is derived from the service's records when asked, so the index holds no
//     string per IP, only a shared pointer to the service's one ServiceName
// Each level's children live in a PersistentMap, so publishing a change to one service
// copies only that service's records and the few trie nodes on its path: the cost of an
// update is proportional to the service, not to the cluster (see persistent_map.h).
//
// RecordTreeWriter lives on the thread that receives objects (the objects-file or API
// watch thread). It applies object changes and Publish()es a new Snapshot into a
// SnapshotHolder; DNS threads read the holder's current snapshot without locks (see
// snapshot_holder.h). Its changes of single objects and its one-pass build are
// record_tree.cc's; its complete lists and loads, reconciled with the tree,
// record_tree_lists.cc's. Object names in Kubernetes are lower-case DNS labels, so they are
// used as keys as they are; the answerer lower-cases query names before looking up.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/base/ip_address.h"
#include "common/base/persistent_map.h"
#include "common/k8s/objects.h"
#include "kubedns/records/multicluster_records.h"
#include "kubedns/records/service_records.h"

namespace kdns::kubedns {

class Snapshot {
 public:
  using Services = PersistentMap<std::string, std::shared_ptr<const ServiceRecords>,
                                 TransparentStringHash, std::equal_to<>>;
  struct Namespace {
    Services services;
    uint32_t answerable = 0;  // services with a Service object (not only orphan slices)
  };
  using Namespaces = PersistentMap<std::string, std::shared_ptr<const Namespace>,
                                   TransparentStringHash, std::equal_to<>>;
  // The services that have the IP (ServiceName::also chains the rare further ones).
  using Reverse = PersistentMap<IpAddress, std::shared_ptr<const ServiceName>, IpAddressHash>;
  // Pod IPs by namespace, for `--pod-records=verified`: the key is PodIpKey(ns, ip), the
  // value how many live pods of the namespace have that IP (hostNetwork pods share their
  // node's). Only a Pod watch fills it.
  using PodIps = PersistentMap<std::string, uint32_t, TransparentStringHash, std::equal_to<>>;

  struct Stats {
    uint64_t services = 0;         // answerable services
    uint64_t endpoints = 0;        // addresses held in slices
    uint64_t reverse_entries = 0;  // both reverse indexes
    uint64_t pod_ips = 0;          // distinct (namespace, IP) pairs of live pods
    // The records' own bytes (ServiceRecords::ModelBytes summed, plus the reverse index's
    // entries): what RSS is compared with in the scale benchmark.
    uint64_t records_bytes = 0;
  };

  const ServiceRecords* FindService(std::string_view ns, std::string_view name) const;
  // True when the namespace holds at least one answerable service (ns.svc.Z exists).
  bool HasNamespace(std::string_view ns) const;
  // Calls f(relative) for each PTR target of `ip`, relative to svc.<zone> ("svc.ns" for a
  // cluster IP, "host.svc.ns" for a headless endpoint), services in (ns, name) order; returns
  // how many (0: the IP has no PTR record). The view is valid during the call only.
  template <class F>
  size_t ForEachPtr(const IpAddress& ip, F&& f) const;
  // Calls f(const ServiceName&) for each service that has `ip` among its external addresses
  // (externalIPs and load balancer ingress IPs; the external zones' PTR records), in (ns,
  // name) order; returns how many. No allocation.
  template <class F>
  size_t ForEachExternalOwner(const IpAddress& ip, F&& f) const;
  // True when a live pod (not Succeeded or Failed) in `ns` has `ip`. No allocation.
  bool HasPodIp(std::string_view ns, const IpAddress& ip) const;

  // 0 before the first Publish; grows by one with each.
  uint64_t generation() const { return generation_; }
  // The version of the records: 0 before the first Publish; grows by one with each Publish
  // that changed anything answers depend on (records, the reverse index, pod IPs, the
  // multicluster zones, being synced), and stays when a Publish changed nothing (a re-LIST
  // or a file reload that found everything as it was). The zones' SOA serial derives from
  // it, so a cache in front can tell that a negative answer may have become stale.
  uint64_t records_version() const { return records_version_; }
  // The source has delivered a complete set at least once (readiness; before this,
  // cluster-zone queries are answered SERVFAIL).
  bool synced() const { return synced_; }
  const Stats& stats() const { return stats_; }
  const Namespaces& namespaces() const { return namespaces_; }
  // The multicluster zones' records (multicluster_records.h).
  const MulticlusterSnapshot& multicluster() const { return multicluster_; }

  // Returns the free heap to the OS (ReleaseFreeHeap, common/base/heap.h) once this snapshot
  // is freed. Set on the snapshot a complete load supersedes: the records only it held are
  // freed by its last reader, which may be a DNS thread at its next query or when it goes
  // idle (SnapshotHolder::Reader::Release), after the load itself has finished. Any thread.
  void ReleaseHeapWhenFreed() const { release_heap_when_freed_.store(true); }

 private:
  friend class RecordTreeWriter;
  mutable std::atomic<bool> release_heap_when_freed_{false};
  Namespaces namespaces_;
  MulticlusterSnapshot multicluster_;
  Reverse reverse_;
  Reverse external_reverse_;  // external addresses: ForEachExternalOwner
  PodIps pod_ips_;
  uint64_t generation_ = 0;
  uint64_t records_version_ = 0;
  bool synced_ = false;
  Stats stats_;
};

class RecordTreeWriter {
 public:
  // While a list or a load is open, PublishDue() turns true once this many bytes of new
  // records (ServiceRecords::ModelBytes) wait unpublished. 1 MiB: a few percent of the
  // records at 10k services, so a list that replaces everything holds at most about this
  // much of the old and the new tree at once, in some 10-100 publishes per list.
  static constexpr uint64_t kListPublishBytes = 1 << 20;

  explicit RecordTreeWriter(uint64_t list_publish_bytes = kListPublishBytes)
      : list_publish_bytes_(list_publish_bytes) {}

  void UpsertService(const k8s::Service& service);
  void DeleteService(std::string_view ns, std::string_view name);
  // A slice whose service-name label changed moves to its new service.
  void UpsertSlice(const k8s::EndpointSlice& slice);
  void DeleteSlice(std::string_view ns, std::string_view name);
  // v1 Endpoints: replaces every slice derived from this object at once.
  void UpsertEndpoints(const k8s::Endpoints& endpoints);
  void DeleteEndpoints(std::string_view ns, std::string_view name);
  // Pods (`--pod-records=verified`): a pod counts while it has IPs and is neither Succeeded
  // nor Failed, since a finished pod's IP may already belong to another pod.
  void UpsertPod(const k8s::Pod& pod);
  void DeletePod(std::string_view ns, std::string_view name);

  // Replaces the whole state (a file reload or a re-LIST): objects missing from the new
  // set disappear. Into an empty tree it is built in one pass; over an existing one only the
  // difference is applied (see ReplaceServices).
  struct ObjectSet {
    std::vector<k8s::Service> services;
    std::vector<k8s::EndpointSlice> slices;  // MCS-labelled ones feed the multicluster writer
    std::vector<k8s::Endpoints> endpoints;
    std::vector<k8s::ServiceImport> service_imports;
    std::vector<k8s::KubesliceServiceImport> kubeslice_service_imports;
  };
  void ReplaceAll(const ObjectSet& objects);

  // Replaces every object of one kind (a re-LIST of that resource): objects of the kind
  // missing from the list are deleted, new and changed ones applied, unchanged ones left
  // alone, so a re-LIST costs what changed and the tree is never built twice. Publish
  // afterwards to swap the new state in at once.
  void ReplaceServices(const std::vector<k8s::Service>& services);
  void ReplaceSlices(const std::vector<k8s::EndpointSlice>& slices);
  void ReplaceEndpoints(const std::vector<k8s::Endpoints>& endpoints);
  void ReplacePods(const std::vector<k8s::Pod>& pods);

  // A complete list of one kind, streamed (the API source decodes a LIST page by page and
  // never holds the whole of it): BeginList(kind), then the kind's Upsert* for every listed
  // object as it is decoded, then EndList(kind), which deletes every object of the kind that
  // was not upserted since BeginList. An upsert of an unchanged object costs a comparison and
  // keeps sharing its records, so a re-LIST costs what changed. Between the two, objects are
  // each in their old or their new version (publishing then shows no half object, only a
  // list not yet finished); Publish after EndList. BeginList again while a list of the kind
  // is open (a LIST restarted from its first page) starts it over.
  enum class ListKind : uint8_t { kServices, kSlices, kEndpoints, kPods };
  void BeginList(ListKind kind);
  void EndList(ListKind kind);
  // Between BeginList(kind) and EndList(kind).
  bool listing(ListKind kind) const { return unlisted_[static_cast<size_t>(kind)].has_value(); }

  // A complete set of every kind (a file load), streamed as it is decoded: BeginLoad() opens
  // a list of each ListKind, then the Upsert* of every object of the set, then EndLoad()
  // ends every list (objects the set does not have are gone). A load cannot be undone: the
  // source delivers only a set it has checked (ObjectsFileSource's validating pass), so
  // between the two every object is in its old or its new version, never half of each, and
  // the state may be published at any time, as during a list (PublishDue). That is what
  // keeps a load that changes everything from holding the old tree and the new one at once:
  // the old records are freed as the load goes, once the readers have moved on. AbortLoad()
  // instead of EndLoad(): the set will not be completed (the file changed under the
  // source): every list closes and nothing is deleted, so what was delivered stays in its
  // new version and the rest in its old one. The multicluster zones are not part of a load:
  // give their lists (multicluster().Replace*) before EndLoad.
  void BeginLoad();
  void EndLoad();
  void AbortLoad();
  bool loading() const { return loading_; }

  // A list or a load is open and at least list_publish_bytes of new records wait
  // unpublished: publish now, so that the records they replace can be freed.
  bool PublishDue() const;

  void MarkSynced() { synced_ = true; }

  // Keep the endpoints' zones (kubedns --zonal) in the slices given from now on; call it
  // before the first object.
  void KeepZones() { zones_ = SliceInfo::ZoneKeeping::kKeep; }

  // The multicluster zones' writer, published with the tree.
  MulticlusterWriter& multicluster() { return multicluster_; }

  // An immutable snapshot of the current state, with the next generation number.
  std::shared_ptr<const Snapshot> Publish();

 private:
  using ServicePtr = std::shared_ptr<const ServiceRecords>;

  const ServiceRecords* Find(const std::string& ns, const std::string& name) const;
  // Installs `records` (null: remove) for ns/name and updates the reverse indexes and stats.
  void Store(const std::string& ns, const std::string& name, ServicePtr records);
  void SetSlice(const std::string& ns, const std::string& service, const std::string& slice,
                std::shared_ptr<const SliceInfo> info);
  void CountPodIp(const std::string& ns, const IpAddress& ip, int delta);
  // An object of `kind` was upserted or deleted: it is no longer missing from an open list.
  void Listed(ListKind kind, const std::string& key);
  // The ServiceName of ns/name: the existing records' one, else a new one.
  std::shared_ptr<const ServiceName> NameOf(const std::string& ns, const std::string& name) const;

  Snapshot::Namespaces namespaces_;
  Snapshot::Reverse reverse_;
  Snapshot::Reverse external_reverse_;
  Snapshot::PodIps pod_ips_;
  Snapshot::Stats stats_;
  MulticlusterWriter multicluster_;
  uint64_t generation_ = 0;
  bool synced_ = false;
  // What the last Publish showed, to tell whether the next one changes anything.
  std::shared_ptr<const Snapshot> published_;
  // Writer-side indexes (not published): which service each slice belongs to
  // ("ns/slice" → service name), and which slices each v1 Endpoints object produced.
  std::unordered_map<std::string, std::string> slice_owner_;
  std::unordered_map<std::string, std::vector<std::string>> endpoints_slices_;
  // "ns/pod" → the IPs that pod adds to pod_ips_.
  std::unordered_map<std::string, std::vector<IpAddress>> pods_;
  // By ListKind, while a list of the kind is open: the "ns/name" keys of the kind at
  // BeginList, sorted, and which of them the list has delivered since (the others are
  // deleted at EndList). A sorted array and a bit per object, not a hash set: a re-LIST or
  // a file load holds one per object of the cluster, at about a third of a set's bytes.
  struct Unlisted {
    std::vector<std::string> keys;
    std::vector<bool> listed;
  };
  std::array<std::optional<Unlisted>, 4> unlisted_;
  bool loading_ = false;
  SliceInfo::ZoneKeeping zones_ = SliceInfo::ZoneKeeping::kDrop;
  const uint64_t list_publish_bytes_;
  uint64_t unpublished_bytes_ = 0;  // ModelBytes of the records stored since the last Publish
};

// "label.name.ns" (or "name.ns" when the label is empty) into `buffer`; empty when it does
// not fit (no such name is a DNS name).
std::string_view PtrRelativeName(std::string_view label, const ServiceName& owner,
                                 std::span<char> buffer);

template <class F>
size_t Snapshot::ForEachPtr(const IpAddress& ip, F&& f) const {
  const auto* owners = reverse_.Find(ip);
  if (owners == nullptr) return 0;
  size_t count = 0;
  std::array<char, 256> buffer;  // a relative name longer than a DNS name is skipped
  for (const ServiceName* owner = owners->get(); owner != nullptr; owner = owner->also.get()) {
    const ServiceRecords* records = FindService(owner->ns, owner->name);
    if (records == nullptr) continue;  // the writer keeps the index and the tree in step
    std::string_view label;
    if (records->headless()) {
      const ServiceRecords::Host* host = records->FindHostByIp(ip);
      if (host == nullptr) continue;
      label = host->label;
    }
    std::string_view relative = PtrRelativeName(label, *owner, buffer);
    if (relative.empty()) continue;
    f(relative);
    ++count;
  }
  return count;
}

template <class F>
size_t Snapshot::ForEachExternalOwner(const IpAddress& ip, F&& f) const {
  const auto* owners = external_reverse_.Find(ip);
  if (owners == nullptr) return 0;
  size_t count = 0;
  for (const ServiceName* owner = owners->get(); owner != nullptr; owner = owner->also.get()) {
    f(*owner);
    ++count;
  }
  return count;
}

}  // namespace kdns::kubedns

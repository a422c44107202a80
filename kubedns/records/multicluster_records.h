// The records of the two multicluster zones (DESIGN.md section 8), as immutable snapshots
// beside the cluster zone's record tree (record_tree.h holds one MulticlusterSnapshot per
// Snapshot, so a DNS thread reads all zones from one snapshot):
//
//   MCS (KEP-1645), zone clusterset.local.: one McsImportRecords per ServiceImport
//     (namespace/name), derived from the import and the EndpointSlices labelled
//     multicluster.kubernetes.io/service-name=<name> in its namespace. Only ready endpoints
//     are served (the spec names no publishNotReadyAddresses for imports). An endpoint is
//     named by its hostname, else its dashed IP (as in the cluster zone), under the cluster
//     id of its slice's multicluster.kubernetes.io/source-cluster label; a slice without that
//     label (or with one that is not a single DNS label) cannot be named and is ignored
//     (counted in stats().unnamed_slices).
//   kubeslice, zone slice.local.: each name (spec.dnsName, spec.aliases[],
//     status.endpoints[].dnsName) with its IPs, checked, capped and claimed per namespace as
//     kubeslice_names.h says; the names' parents inside the zone are empty non-terminals
//     (RFC 8020: they exist, so NODATA, not NXDOMAIN).
// Imports are untrusted input (DESIGN.md section 7, "Tenants"): an MCS import whose name or
// namespace is not a DNS label is not served (import_invalid), nor one whose slices hold more
// than ImportLimits::max_endpoints addresses (import_too_large); an endpoint hostname that
// is not a DNS label is not used (the endpoint is named by its dashed IP; import_invalid).
// An MCS name needs no claim: svc.ns.svc.<zone> holds only imports and slices of namespace
// ns, so no other namespace can add to it.
//
// MulticlusterWriter lives on the source thread with the RecordTreeWriter, which owns it.
// MCS changes rebuild only the import concerned; kubeslice imports are few (one per
// exported service of a slice), and a change rebuilds that zone's index.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"
#include "common/base/persistent_map.h"
#include "common/dns/name.h"
#include "common/k8s/objects.h"
#include "kubedns/records/import_limits.h"
#include "kubedns/records/kubeslice_names.h"

namespace kdns::kubedns {

enum class MulticlusterZone : uint8_t { kMcs, kKubeslice };

// The parts of an MCS EndpointSlice that DNS uses.
struct McsSliceInfo {
  struct Address {
    IpAddress ip;
    bool ready = true;
    std::string hostname;
    friend bool operator==(const Address&, const Address&) = default;
  };
  std::string cluster;  // the source-cluster label, lower case
  std::vector<Address> addresses;
  std::vector<k8s::EndpointPort> ports;

  // An endpoint hostname that is not a DNS label is dropped (counted as import_invalid).
  static McsSliceInfo FromSlice(const k8s::EndpointSlice& slice);
  // The cluster id names one DNS label of host.cluster.svc.ns.svc.<zone> (KEP-1645's DNS
  // specification): when it is not a DNS-1123 label (empty, longer than 63 bytes, dotted,
  // ...) it cannot, and the slice is left out.
  bool nameable() const;
  friend bool operator==(const McsSliceInfo&, const McsSliceInfo&) = default;
};

class McsImportRecords {
 public:
  struct Host {
    std::string cluster;  // lower case
    std::string label;    // lower case: the hostname or the dashed IP
    IpAddress ip;
  };
  // One per named port of the import. A headless import's targets are its hosts, each with
  // TargetPort(set, host.cluster): computed when asked, so the records hold ports plus
  // hosts, never ports times hosts.
  struct SrvSet {
    std::string port_name;  // lower case, without the underscore
    k8s::Protocol protocol;
    uint16_t port = 0;  // the import's port
  };
  using Slices = std::vector<std::pair<std::string, std::shared_ptr<const McsSliceInfo>>>;

  // `import` may be null: slices can arrive before their import, and are kept until it
  // comes (such records answer nothing).
  McsImportRecords(std::shared_ptr<const k8s::ServiceImport> import, Slices slices);

  const k8s::ServiceImport* import() const { return import_.get(); }
  bool answerable() const { return import_ != nullptr; }
  bool headless() const {
    return import_ != nullptr && import_->type == k8s::ServiceImportType::kHeadless;
  }
  const Slices& slices() const { return slices_; }
  // Ready endpoints of every cluster, sorted by (cluster, label, ip), distinct.
  const std::vector<Host>& hosts() const { return hosts_; }
  // The distinct addresses of hosts(), sorted: the bare name's headless answer.
  const std::vector<IpAddress>& addresses() const { return addresses_; }
  std::span<const Host> FindHosts(std::string_view cluster, std::string_view label) const;
  bool HasCluster(std::string_view cluster) const;
  const SrvSet* FindSrv(std::string_view port_name, std::string_view protocol) const;
  // The port a headless SRV record of `set` names for a host of `cluster`: the one that
  // cluster's slices publish under the set's name and protocol (the target port; the last
  // slice by name wins), else the import's.
  uint16_t TargetPort(const SrvSet& set, std::string_view cluster) const;
  bool HasSrvProtocol(std::string_view protocol) const;
  uint64_t address_count() const;  // every endpoint address held in the slices

 private:
  std::shared_ptr<const k8s::ServiceImport> import_;
  Slices slices_;  // sorted by slice name
  std::vector<Host> hosts_;
  std::vector<IpAddress> addresses_;
  std::vector<SrvSet> srv_;
  // Headless: each cluster's named slice ports, one per (cluster, name, protocol), sorted.
  struct ClusterPort {
    std::string_view cluster;  // the slice's McsSliceInfo::cluster, held by slices_
    std::string name;          // lower case
    k8s::Protocol protocol;
    uint16_t port;
  };
  std::vector<ClusterPort> cluster_ports_;
};

class MulticlusterSnapshot {
 public:
  using Imports = PersistentMap<std::string, std::shared_ptr<const McsImportRecords>,
                                TransparentStringHash, std::equal_to<>>;

  struct Stats {
    uint64_t mcs_imports = 0;    // ServiceImports (multicluster.x-k8s.io)
    uint64_t mcs_endpoints = 0;  // addresses held in MCS slices
    uint64_t unnamed_slices = 0;
    uint64_t kubeslice_imports = 0;
    uint64_t kubeslice_endpoints = 0;  // status.endpoints[] with an IP
  };

  // The import namespace/name, or nullptr.
  const McsImportRecords* FindImport(std::string_view ns, std::string_view name) const;
  // True when an answerable import lives in `ns` (ns.svc.clusterset.local exists).
  bool HasImportNamespace(std::string_view ns) const;
  // A kubeslice name (lower case). nullptr: no such name; an empty vector: an empty
  // non-terminal.
  const std::vector<IpAddress>* FindKubesliceName(const dns::Name& lower) const {
    return kubeslice_names_->Find(lower);
  }

  // A zone is synced once its source delivered a complete set (or found its API absent);
  // until then its names are answered SERVFAIL.
  bool mcs_synced() const { return mcs_synced_; }
  bool kubeslice_synced() const { return kubeslice_synced_; }
  const Stats& stats() const { return stats_; }
  const Imports& imports() const { return imports_; }
  const KubesliceNames& kubeslice_names() const { return *kubeslice_names_; }
  // True when `other` is this state or a copy of it (nothing changed between the two).
  bool SameRecordsAs(const MulticlusterSnapshot& other) const {
    return imports_.SharesRootWith(other.imports_) &&
           namespaces_.SharesRootWith(other.namespaces_) &&
           (kubeslice_names_ == other.kubeslice_names_ ||
            (kubeslice_names_->size() == 0 && other.kubeslice_names_->size() == 0)) &&
           mcs_synced_ == other.mcs_synced_ && kubeslice_synced_ == other.kubeslice_synced_;
  }

 private:
  friend class MulticlusterWriter;
  Imports imports_;
  PersistentMap<std::string, uint32_t, TransparentStringHash, std::equal_to<>> namespaces_;
  std::shared_ptr<const KubesliceNames> kubeslice_names_ = std::make_shared<const KubesliceNames>();
  bool mcs_synced_ = false;
  bool kubeslice_synced_ = false;
  Stats stats_;
};

class MulticlusterWriter {
 public:
  // The kubeslice zone's name in lower case without the trailing dot ("slice.local"); empty
  // (the default) when that zone is off. Names outside it are not kept. Set it, and the
  // limits, before the first import.
  void SetKubesliceZone(std::string zone) { kubeslice_.SetZone(std::move(zone)); }
  void SetLimits(const ImportLimits& limits) {
    limits_ = limits;
    kubeslice_.SetLimits(limits);
  }

  void UpsertServiceImport(const k8s::ServiceImport& import);
  void DeleteServiceImport(std::string_view ns, std::string_view name);
  void ReplaceServiceImports(const std::vector<k8s::ServiceImport>& imports);
  // Slices without the multicluster service-name label are ignored here.
  void UpsertSlice(const k8s::EndpointSlice& slice);
  void DeleteSlice(std::string_view ns, std::string_view name);
  void ReplaceSlices(const std::vector<k8s::EndpointSlice>& slices);

  void UpsertKubesliceServiceImport(const k8s::KubesliceServiceImport& import);
  void DeleteKubesliceServiceImport(std::string_view ns, std::string_view name);
  void ReplaceKubesliceServiceImports(const std::vector<k8s::KubesliceServiceImport>& imports);

  void MarkMcsSynced() { snapshot_.mcs_synced_ = true; }
  void MarkKubesliceSynced() { snapshot_.kubeslice_synced_ = true; }

  // The current state; cheap to copy (persistent maps).
  const MulticlusterSnapshot& snapshot() const { return snapshot_; }

 private:
  struct SliceOwner {
    std::string import;  // the import's name
    std::string cluster;
  };
  void Rebuild(const std::string& ns, const std::string& name);
  void PublishKubeslice();

  ImportLimits limits_;
  MulticlusterSnapshot snapshot_;
  // Writer-side state (not published): imports and slices by "ns/name".
  std::map<std::string, std::shared_ptr<const k8s::ServiceImport>> imports_;
  std::map<std::string, std::shared_ptr<const McsSliceInfo>> slices_;
  std::map<std::string, std::string> slice_import_;  // "ns/slice" → import name
  KubesliceNamesWriter kubeslice_;
};

}  // namespace kdns::kubedns

// ServiceRecords: everything DNS answers for one Service, derived once from the Service
// and its EndpointSlices when either changes, so queries only read it.
//
// The inputs are kept in compact form (ServiceInfo, SliceInfo: only what DNS uses) because
// a later change to the Service (ClusterIP to headless, say) or to one slice must rebuild
// the derived parts from all of them. The derived parts, for headless services:
//   hosts   each distinct ready address (ready or not when publishNotReadyAddresses) with
//           its host label: the endpoint's hostname, or the dashed IP (10-244-1-12,
//           fd00-10-244--12). Sorted by label, so host.svc.ns.svc.Z is a binary search.
//           An address in several slices (a slice being split or merged) appears once.
//   srv     per named (port, protocol) of the slices, the distinct (host label, port) pairs:
//           one SRV record each, so a host with a v4 and a v6 address appears once.
//   zones   (only when the slices kept them, kubedns --zonal) each host's topology zone, as
//           an index into the service's distinct zone names, for zonal answers.
// For ClusterIP services only the Service is used: its cluster IPs and its named ports.
//
// Memory (DESIGN section 9, a 5,000-node cluster in well under 40 MiB): nothing is kept per
// endpoint on the heap. A slice holds its addresses as fixed-size values in one array and
// the hostnames of the few endpoints that have one in one string pool; a headless service
// holds its host labels in one pool that Host::label views, an IP-sorted index of its hosts
// (for PTR answers) and its SRV targets as (host index, port) pairs. The service's name is
// stored once (ServiceName), shared with the reverse index. ModelBytes() is what the
// kdns_kubedns_records_bytes gauge sums.
//
// Immutable once built; shared between snapshots and read by every DNS thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"
#include "common/k8s/objects.h"

namespace kdns::kubedns {

// A service's namespace and name, stored once per service and shared by its records and the
// reverse index. In the reverse index, `also` chains the further services that have the same
// IP (rare: two services listing one pod), sorted by (ns, name); elsewhere it is null.
struct ServiceName {
  std::string ns;
  std::string name;
  std::shared_ptr<const ServiceName> also;
};

// The protocol as an SRV name's label has it, without the underscore: "tcp", "udp", "sctp".
std::string_view ProtocolLabel(k8s::Protocol protocol);

// Where a Service is reached from outside the cluster (k8s::Service::external_ips and
// external_hostnames), for the external zone (--external-zone). Held behind a pointer, so a
// service without any pays one null pointer.
struct ExternalAddresses {
  std::vector<IpAddress> ips;
  std::vector<std::string> hostnames;  // lower case, no trailing dot
  friend bool operator==(const ExternalAddresses&, const ExternalAddresses&) = default;
};

// The parts of a Service that DNS uses.
struct ServiceInfo {
  enum class Kind : uint8_t { kClusterIP, kHeadless, kExternalName };
  Kind kind = Kind::kClusterIP;
  std::vector<IpAddress> cluster_ips;
  std::string external_name;  // without a trailing dot, as in the API
  std::vector<k8s::ServicePort> ports;
  bool publish_not_ready_addresses = false;
  // Null when the service has no external address (most services).
  std::shared_ptr<const ExternalAddresses> external;

  static ServiceInfo FromService(const k8s::Service& service);
  friend bool operator==(const ServiceInfo& a, const ServiceInfo& b) {
    const bool same_external = a.external == nullptr || b.external == nullptr
                                   ? a.external == b.external
                                   : *a.external == *b.external;
    return a.kind == b.kind && a.cluster_ips == b.cluster_ips &&
           a.external_name == b.external_name && a.ports == b.ports &&
           a.publish_not_ready_addresses == b.publish_not_ready_addresses && same_external;
  }
};

// The parts of an EndpointSlice that DNS uses, flat: one fixed-size Address per endpoint
// address, and the hostnames of the addresses that have one in one pool.
struct SliceInfo {
  struct Address {
    IpAddress ip;
    bool ready = true;
    friend bool operator==(const Address&, const Address&) = default;
  };
  // addresses[address] has the hostname hostname_pool[previous end, end).
  struct Hostname {
    uint32_t address;
    uint32_t end;
    friend bool operator==(const Hostname&, const Hostname&) = default;
  };
  // addresses[address] up to the next run's address are in names[zone] (no zone when zone
  // is kNoZone): endpoints of one zone are mostly listed together, so a slice holds a few
  // runs and each distinct zone name once, not a string per endpoint.
  struct ZoneRun {
    static constexpr uint32_t kNoZone = UINT32_MAX;
    uint32_t address;
    uint32_t zone;
    friend bool operator==(const ZoneRun&, const ZoneRun&) = default;
  };
  struct ZoneTable {
    std::vector<ZoneRun> runs;       // sorted by address
    std::vector<std::string> names;  // distinct, lower-cased
    friend bool operator==(const ZoneTable&, const ZoneTable&) = default;
  };
  // The table behind one pointer, so a slice without zones pays 8 bytes; compared by value,
  // so a re-listed slice with the same zones is unchanged.
  struct ZoneTablePtr {
    std::unique_ptr<const ZoneTable> table;  // null: no endpoint has a zone kept
    friend bool operator==(const ZoneTablePtr& a, const ZoneTablePtr& b) {
      return a.table == nullptr || b.table == nullptr ? a.table == b.table : *a.table == *b.table;
    }
  };
  std::vector<Address> addresses;   // one per endpoint address
  std::vector<Hostname> hostnames;  // sorted by address; only addresses with a hostname
  std::string hostname_pool;
  std::vector<k8s::EndpointPort> ports;
  // Null unless zones are kept (ZoneKeeping::kKeep, kubedns --zonal) and an endpoint has one.
  ZoneTablePtr zones;

  // The hostname of addresses[address] as given (not lower-cased), or "" when it has none.
  std::string_view hostname(size_t address) const;
  // The zone of addresses[address] in lower case, or "" when it has none (or zones are
  // dropped).
  std::string_view zone(size_t address) const;
  // The heap and inline bytes this info holds.
  size_t ModelBytes() const;

  // Whether endpoints' zones are kept: only zonal answers read them, so without --zonal they
  // cost nothing.
  enum class ZoneKeeping : uint8_t { kDrop, kKeep };
  // FQDN slices carry no addresses DNS can serve: their info has no addresses.
  static SliceInfo FromSlice(const k8s::EndpointSlice& slice,
                             ZoneKeeping zones = ZoneKeeping::kDrop);
  friend bool operator==(const SliceInfo&, const SliceInfo&) = default;
};

class ServiceRecords {
 public:
  struct Host {
    static constexpr uint16_t kNoZone = UINT16_MAX;
    std::string_view label;  // lower case; a view into the records' label pool
    IpAddress ip;
    uint16_t zone = kNoZone;  // index into zones() (fits in the struct's padding)
  };
  struct SrvTarget {
    uint32_t host;  // index into hosts()
    uint16_t port;
  };
  struct SrvSet {
    std::string port_name;  // lower case, without the underscore
    k8s::Protocol protocol;
    std::vector<SrvTarget> targets;  // headless only; ClusterIP uses `port`
    uint16_t port = 0;               // ClusterIP: the service port
  };
  using Slices = std::vector<std::pair<std::string, std::shared_ptr<const SliceInfo>>>;

  // `service` may be null: slices can arrive before their Service, and are kept until it
  // comes (such a node answers nothing).
  ServiceRecords(std::shared_ptr<const ServiceName> name,
                 std::shared_ptr<const ServiceInfo> service, Slices slices);
  // Hosts view the label pool: the records stay where they were built.
  ServiceRecords(const ServiceRecords&) = delete;
  ServiceRecords& operator=(const ServiceRecords&) = delete;

  // A copy with one slice replaced, added (info non-null) or removed (info null).
  std::shared_ptr<const ServiceRecords> WithSlice(const std::string& slice_name,
                                                  std::shared_ptr<const SliceInfo> info) const;
  std::shared_ptr<const ServiceRecords> WithService(
      std::shared_ptr<const ServiceInfo> service) const;

  const ServiceName& name() const { return *name_; }
  const std::shared_ptr<const ServiceName>& shared_name() const { return name_; }
  const ServiceInfo* service() const { return service_.get(); }
  const Slices& slices() const { return slices_; }
  bool answerable() const { return service_ != nullptr; }
  bool headless() const { return service_ && service_->kind == ServiceInfo::Kind::kHeadless; }

  const std::vector<Host>& hosts() const { return hosts_; }
  // Hosts with this label, which must be in lower case (the answerer lower-cases the
  // query name once, without allocating): a v4 and a v6 address may share one label.
  std::span<const Host> FindHost(std::string_view label) const;
  // The host with this address, or nullptr (PTR answers of headless services).
  const Host* FindHostByIp(const IpAddress& ip) const;
  // The distinct zones of the hosts, lower-cased (kept only with ZoneKeeping::kKeep).
  const std::vector<std::string>& zones() const { return zones_; }
  // The index in zones() of `zone` (lower case, as the answerer's query name is), or
  // Host::kNoZone.
  uint16_t FindZone(std::string_view zone) const;
  // The SRV set for _port._proto (labels without underscores), or nullptr.
  const SrvSet* FindSrv(std::string_view port_name, std::string_view protocol) const;
  const std::vector<SrvSet>& srv_sets() const { return srv_; }
  // True when some SRV set has this protocol (so _proto.svc... is an empty non-terminal).
  bool HasSrvProtocol(std::string_view protocol) const;
  // Endpoint addresses held in the slices (ready or not).
  uint64_t address_count() const;
  // The bytes these records hold: inline, heap, and their service's and slices' infos (each
  // slice belongs to one service, so summing over the services of a snapshot counts every
  // byte once; the name is counted here too).
  size_t ModelBytes() const;

 private:
  void Derive();
  // The index of `zone` in zones_, added when new; kNoZone for "".
  uint16_t InternZone(std::string_view zone);

  std::shared_ptr<const ServiceName> name_;
  std::shared_ptr<const ServiceInfo> service_;
  Slices slices_;                   // sorted by slice name
  std::unique_ptr<char[]> labels_;  // the host labels, back to back
  size_t labels_bytes_ = 0;
  std::vector<Host> hosts_;
  std::vector<uint32_t> by_ip_;  // indexes into hosts_, sorted by their IP
  std::vector<SrvSet> srv_;
  std::vector<std::string> zones_;  // empty unless a slice kept zones
};

}  // namespace kdns::kubedns

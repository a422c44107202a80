#include "kubedns/records/service_records.h"

#include <algorithm>
#include <unordered_map>

namespace kdns::kubedns {

namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::string_view ProtocolLabel(k8s::Protocol protocol) {
  switch (protocol) {
    case k8s::Protocol::kTcp:
      return "tcp";
    case k8s::Protocol::kUdp:
      return "udp";
    case k8s::Protocol::kSctp:
      return "sctp";
  }
  return "";
}

ServiceInfo ServiceInfo::FromService(const k8s::Service& service) {
  ServiceInfo info;
  if (service.type == k8s::ServiceType::kExternalName) {
    info.kind = Kind::kExternalName;
    info.external_name = service.external_name;
    // The API accepts a fully qualified externalName ("svc1.testns.svc.cluster.local."); it
    // names the same target as the relative spelling, so it is kept in that one form.
    if (info.external_name.size() > 1 && info.external_name.back() == '.') {
      info.external_name.pop_back();
    }
  } else if (service.headless) {
    info.kind = Kind::kHeadless;
  } else {
    info.kind = Kind::kClusterIP;
    info.cluster_ips = service.cluster_ips;
  }
  info.ports = service.ports;
  info.publish_not_ready_addresses = service.publish_not_ready_addresses;
  if (!service.external_ips.empty() || !service.external_hostnames.empty()) {
    info.external = std::make_shared<const ExternalAddresses>(
        ExternalAddresses{service.external_ips, service.external_hostnames});
  }
  return info;
}

namespace {

// Adds the run of `zone` starting at `address` when it differs from the last run (no run
// while no endpoint has a zone).
// Host::zone sits in what was the struct's padding (a 16-byte view and a 17-byte address,
// padded to 40 bytes before it came): zonal answers cost no byte per host.
static_assert(sizeof(ServiceRecords::Host) == 40);

// The zone is kept lower-cased, as CoreDNS keeps it (object/endpoint.go), so that the
// lower-cased query name compares without folding per query.
void AddZoneRun(std::string_view zone, uint32_t address, SliceInfo::ZoneTable& table) {
  uint32_t index = SliceInfo::ZoneRun::kNoZone;
  if (!zone.empty()) {
    std::string lower = Lower(zone);
    auto it = std::find(table.names.begin(), table.names.end(), lower);
    index = static_cast<uint32_t>(it - table.names.begin());
    if (it == table.names.end()) table.names.push_back(std::move(lower));
  }
  const uint32_t last = table.runs.empty() ? SliceInfo::ZoneRun::kNoZone : table.runs.back().zone;
  if (index != last) table.runs.push_back(SliceInfo::ZoneRun{address, index});
}

}  // namespace

SliceInfo SliceInfo::FromSlice(const k8s::EndpointSlice& slice, ZoneKeeping zones) {
  SliceInfo info;
  info.ports = slice.ports;
  if (slice.address_type == k8s::AddressType::kFqdn) return info;
  // Exact sizes first: these arrays live as long as the slice, so no growth slack is kept.
  size_t addresses = 0, named = 0, pool = 0;
  for (const auto& endpoint : slice.endpoints) {
    addresses += endpoint.addresses.size();
    if (!endpoint.hostname.empty()) {
      named += endpoint.addresses.size();
      pool += endpoint.hostname.size() * endpoint.addresses.size();
    }
  }
  info.addresses.reserve(addresses);
  info.hostnames.reserve(named);
  info.hostname_pool.reserve(pool);
  ZoneTable zone_table;
  for (const auto& endpoint : slice.endpoints) {
    if (zones == ZoneKeeping::kKeep && !endpoint.addresses.empty()) {
      AddZoneRun(endpoint.zone, static_cast<uint32_t>(info.addresses.size()), zone_table);
    }
    for (const auto& ip : endpoint.addresses) {
      if (!endpoint.hostname.empty()) {
        info.hostname_pool.append(endpoint.hostname);
        info.hostnames.push_back(Hostname{static_cast<uint32_t>(info.addresses.size()),
                                          static_cast<uint32_t>(info.hostname_pool.size())});
      }
      info.addresses.push_back(Address{ip, endpoint.ready});
    }
  }
  if (!zone_table.runs.empty()) {
    zone_table.runs.shrink_to_fit();
    zone_table.names.shrink_to_fit();
    info.zones.table = std::make_unique<const ZoneTable>(std::move(zone_table));
  }
  return info;
}

std::string_view SliceInfo::zone(size_t address) const {
  if (zones.table == nullptr) return {};
  const ZoneTable& table = *zones.table;
  auto it = std::upper_bound(table.runs.begin(), table.runs.end(), address,
                             [](size_t a, const ZoneRun& run) { return a < run.address; });
  if (it == table.runs.begin()) return {};
  const uint32_t index = (it - 1)->zone;
  return index == ZoneRun::kNoZone ? std::string_view() : std::string_view(table.names[index]);
}

std::string_view SliceInfo::hostname(size_t address) const {
  auto it = std::lower_bound(hostnames.begin(), hostnames.end(), address,
                             [](const Hostname& h, size_t a) { return h.address < a; });
  if (it == hostnames.end() || it->address != address) return {};
  const uint32_t begin = it == hostnames.begin() ? 0 : (it - 1)->end;
  return std::string_view(hostname_pool).substr(begin, it->end - begin);
}

size_t SliceInfo::ModelBytes() const {
  size_t bytes = sizeof(SliceInfo) + addresses.capacity() * sizeof(Address) +
                 hostnames.capacity() * sizeof(Hostname) +
                 ports.capacity() * sizeof(k8s::EndpointPort);
  if (hostname_pool.capacity() > 15) bytes += hostname_pool.capacity() + 1;  // beyond SSO
  if (zones.table != nullptr) {
    const ZoneTable& table = *zones.table;
    bytes += sizeof(ZoneTable) + table.runs.capacity() * sizeof(ZoneRun) +
             table.names.capacity() * sizeof(std::string);
    for (const auto& name : table.names) {
      if (name.capacity() > 15) bytes += name.capacity() + 1;
    }
  }
  return bytes;
}

ServiceRecords::ServiceRecords(std::shared_ptr<const ServiceName> name,
                               std::shared_ptr<const ServiceInfo> service, Slices slices)
    : name_(std::move(name)), service_(std::move(service)), slices_(std::move(slices)) {
  std::sort(slices_.begin(), slices_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Derive();
}

std::shared_ptr<const ServiceRecords> ServiceRecords::WithSlice(
    const std::string& slice_name, std::shared_ptr<const SliceInfo> info) const {
  Slices slices;
  slices.reserve(slices_.size() + 1);
  for (const auto& entry : slices_) {
    if (entry.first != slice_name) slices.push_back(entry);
  }
  if (info != nullptr) slices.emplace_back(slice_name, std::move(info));
  return std::make_shared<const ServiceRecords>(name_, service_, std::move(slices));
}

std::shared_ptr<const ServiceRecords> ServiceRecords::WithService(
    std::shared_ptr<const ServiceInfo> service) const {
  return std::make_shared<const ServiceRecords>(name_, std::move(service), slices_);
}

void ServiceRecords::Derive() {
  if (service_ == nullptr) return;
  if (service_->kind == ServiceInfo::Kind::kClusterIP) {
    for (const auto& port : service_->ports) {
      if (port.name.empty()) continue;  // no SRV for an unnamed port
      srv_.push_back(SrvSet{Lower(port.name), port.protocol, {}, port.port});
    }
    return;
  }
  if (service_->kind != ServiceInfo::Kind::kHeadless) return;

  // Distinct addresses, first slice (by name) first; a hostname wins over none.
  const bool include_not_ready = service_->publish_not_ready_addresses;
  struct Chosen {
    const SliceInfo* slice;
    uint32_t address;
  };
  std::unordered_map<IpAddress, size_t, IpAddressHash> by_ip;
  std::vector<Chosen> chosen;
  for (const auto& [name, slice] : slices_) {
    for (uint32_t i = 0; i < slice->addresses.size(); ++i) {
      const auto& address = slice->addresses[i];
      if (!address.ready && !include_not_ready) continue;
      auto [it, inserted] = by_ip.try_emplace(address.ip, chosen.size());
      if (inserted) {
        chosen.push_back(Chosen{slice.get(), i});
      } else if (const Chosen& first = chosen[it->second];
                 first.slice->hostname(first.address).empty() && !slice->hostname(i).empty()) {
        chosen[it->second] = Chosen{slice.get(), i};
      }
    }
  }
  // The labels go into one pool sized up front, so the views stay valid.
  std::vector<std::string> labels;
  labels.reserve(chosen.size());
  for (const auto& [slice, i] : chosen) {
    std::string_view hostname = slice->hostname(i);
    labels.push_back(hostname.empty() ? slice->addresses[i].ip.DashedName() : Lower(hostname));
    labels_bytes_ += labels.back().size();
  }
  labels_ = std::make_unique<char[]>(labels_bytes_);
  hosts_.reserve(chosen.size());
  char* next = labels_.get();
  for (size_t k = 0; k < chosen.size(); ++k) {
    std::copy(labels[k].begin(), labels[k].end(), next);
    hosts_.push_back(Host{std::string_view(next, labels[k].size()),
                          chosen[k].slice->addresses[chosen[k].address].ip,
                          InternZone(chosen[k].slice->zone(chosen[k].address))});
    next += labels[k].size();
  }
  zones_.shrink_to_fit();
  std::sort(hosts_.begin(), hosts_.end(), [](const Host& a, const Host& b) {
    return a.label != b.label ? a.label < b.label : a.ip < b.ip;
  });
  for (size_t i = 0; i < hosts_.size(); ++i) by_ip[hosts_[i].ip] = i;
  by_ip_.resize(hosts_.size());
  for (uint32_t i = 0; i < by_ip_.size(); ++i) by_ip_[i] = i;
  std::sort(by_ip_.begin(), by_ip_.end(),
            [this](uint32_t a, uint32_t b) { return hosts_[a].ip < hosts_[b].ip; });

  // SRV targets per named port of the slices, one per distinct (host label, port).
  for (const auto& [name, slice] : slices_) {
    for (const auto& port : slice->ports) {
      if (port.name.empty() || !port.port) continue;
      std::string port_name = Lower(port.name);
      auto set = std::find_if(srv_.begin(), srv_.end(), [&](const SrvSet& s) {
        return s.port_name == port_name && s.protocol == port.protocol;
      });
      if (set == srv_.end()) {
        srv_.push_back(SrvSet{port_name, port.protocol, {}, 0});
        set = srv_.end() - 1;
      }
      for (const auto& address : slice->addresses) {
        if (!address.ready && !include_not_ready) continue;
        set->targets.push_back(SrvTarget{static_cast<uint32_t>(by_ip[address.ip]), *port.port});
      }
    }
  }
  for (auto& set : srv_) {
    auto key_less = [this](const SrvTarget& a, const SrvTarget& b) {
      const auto& la = hosts_[a.host].label;
      const auto& lb = hosts_[b.host].label;
      return la != lb ? la < lb : a.port < b.port;
    };
    auto key_equal = [this](const SrvTarget& a, const SrvTarget& b) {
      return hosts_[a.host].label == hosts_[b.host].label && a.port == b.port;
    };
    std::sort(set.targets.begin(), set.targets.end(), key_less);
    set.targets.erase(std::unique(set.targets.begin(), set.targets.end(), key_equal),
                      set.targets.end());
  }
  // A named port whose endpoints are all filtered out serves no SRV records.
  srv_.erase(
      std::remove_if(srv_.begin(), srv_.end(), [](const SrvSet& s) { return s.targets.empty(); }),
      srv_.end());
  for (auto& set : srv_) set.targets.shrink_to_fit();
}

uint16_t ServiceRecords::InternZone(std::string_view zone) {
  if (zone.empty()) return Host::kNoZone;
  uint16_t index = FindZone(zone);
  if (index != Host::kNoZone) return index;
  if (zones_.size() >= Host::kNoZone) return Host::kNoZone;  // 65535 zones: the rest unzoned
  zones_.emplace_back(zone);
  return static_cast<uint16_t>(zones_.size() - 1);
}

uint16_t ServiceRecords::FindZone(std::string_view zone) const {
  auto it = std::find(zones_.begin(), zones_.end(), zone);
  return it == zones_.end() ? Host::kNoZone : static_cast<uint16_t>(it - zones_.begin());
}

const ServiceRecords::Host* ServiceRecords::FindHostByIp(const IpAddress& ip) const {
  auto it =
      std::lower_bound(by_ip_.begin(), by_ip_.end(), ip,
                       [this](uint32_t host, const IpAddress& a) { return hosts_[host].ip < a; });
  return it != by_ip_.end() && hosts_[*it].ip == ip ? &hosts_[*it] : nullptr;
}

uint64_t ServiceRecords::address_count() const {
  uint64_t count = 0;
  for (const auto& [name, slice] : slices_) count += slice->addresses.size();
  return count;
}

size_t ServiceRecords::ModelBytes() const {
  auto string_heap = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  size_t bytes = sizeof(ServiceRecords) + sizeof(ServiceName) + string_heap(name_->ns) +
                 string_heap(name_->name) + labels_bytes_ + hosts_.capacity() * sizeof(Host) +
                 by_ip_.capacity() * sizeof(uint32_t) + zones_.capacity() * sizeof(std::string) +
                 slices_.capacity() * sizeof(Slices::value_type);
  for (const auto& zone : zones_) bytes += string_heap(zone);
  for (const auto& set : srv_) {
    bytes +=
        sizeof(SrvSet) + string_heap(set.port_name) + set.targets.capacity() * sizeof(SrvTarget);
  }
  if (service_ != nullptr) {
    bytes += sizeof(ServiceInfo) + service_->cluster_ips.capacity() * sizeof(IpAddress) +
             string_heap(service_->external_name) +
             service_->ports.capacity() * sizeof(k8s::ServicePort);
    if (const ExternalAddresses* external = service_->external.get()) {
      bytes += sizeof(ExternalAddresses) + external->ips.capacity() * sizeof(IpAddress) +
               external->hostnames.capacity() * sizeof(std::string);
      for (const auto& hostname : external->hostnames) bytes += string_heap(hostname);
    }
  }
  for (const auto& [name, slice] : slices_) bytes += string_heap(name) + slice->ModelBytes();
  return bytes;
}

std::span<const ServiceRecords::Host> ServiceRecords::FindHost(std::string_view label) const {
  auto first = std::lower_bound(hosts_.begin(), hosts_.end(), label,
                                [](const Host& h, std::string_view l) { return h.label < l; });
  auto last = first;
  while (last != hosts_.end() && last->label == label) ++last;
  return {first, last};
}

const ServiceRecords::SrvSet* ServiceRecords::FindSrv(std::string_view port_name,
                                                      std::string_view protocol) const {
  for (const auto& set : srv_) {
    if (EqualsIgnoringCase(set.port_name, port_name) &&
        EqualsIgnoringCase(ProtocolLabel(set.protocol), protocol)) {
      return &set;
    }
  }
  return nullptr;
}

bool ServiceRecords::HasSrvProtocol(std::string_view protocol) const {
  for (const auto& set : srv_) {
    if (EqualsIgnoringCase(ProtocolLabel(set.protocol), protocol)) return true;
  }
  return false;
}

}  // namespace kdns::kubedns

#include "kubedns/service_records.h"

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

}  // namespace

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
  return info;
}

SliceInfo SliceInfo::FromSlice(const k8s::EndpointSlice& slice) {
  SliceInfo info;
  info.ports = slice.ports;
  if (slice.address_type == k8s::AddressType::kFqdn) return info;
  for (const auto& endpoint : slice.endpoints) {
    for (const auto& ip : endpoint.addresses) {
      info.addresses.push_back(Address{ip, endpoint.ready, endpoint.hostname});
    }
  }
  return info;
}

ServiceRecords::ServiceRecords(std::shared_ptr<const ServiceInfo> service, Slices slices)
    : service_(std::move(service)), slices_(std::move(slices)) {
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
  return std::make_shared<const ServiceRecords>(service_, std::move(slices));
}

std::shared_ptr<const ServiceRecords> ServiceRecords::WithService(
    std::shared_ptr<const ServiceInfo> service) const {
  return std::make_shared<const ServiceRecords>(std::move(service), slices_);
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
  std::unordered_map<IpAddress, size_t, IpAddressHash> by_ip;
  std::vector<const SliceInfo::Address*> chosen;
  for (const auto& [name, slice] : slices_) {
    for (const auto& address : slice->addresses) {
      if (!address.ready && !include_not_ready) continue;
      auto [it, inserted] = by_ip.try_emplace(address.ip, chosen.size());
      if (inserted) {
        chosen.push_back(&address);
      } else if (chosen[it->second]->hostname.empty() && !address.hostname.empty()) {
        chosen[it->second] = &address;
      }
    }
  }
  hosts_.reserve(chosen.size());
  for (const auto* address : chosen) {
    hosts_.push_back(
        Host{address->hostname.empty() ? address->ip.DashedName() : Lower(address->hostname),
             address->ip});
  }
  std::sort(hosts_.begin(), hosts_.end(), [](const Host& a, const Host& b) {
    return a.label != b.label ? a.label < b.label : a.ip < b.ip;
  });
  for (size_t i = 0; i < hosts_.size(); ++i) by_ip[hosts_[i].ip] = i;

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

#include "kubedns/answering/external_answer.h"

#include <algorithm>
#include <string_view>

#include "common/dns/reverse.h"

namespace kdns::kubedns {
namespace {

using dns::RrClass;
using dns::RrType;
using dns::Section;

// k8s_external's SOA timers (plugin/k8s_external/apex.go); the minimum is the TTL.
constexpr uint32_t kRefreshS = 7200;
constexpr uint32_t kRetryS = 1800;
constexpr uint32_t kExpireS = 86400;

std::string_view WithoutUnderscore(std::string_view label) {
  return !label.empty() && label.front() == '_' ? label.substr(1) : label;
}

}  // namespace

ExternalAnswerer::ExternalAnswerer(const ExternalConfig& config) : config_(config) {
  for (const dns::Name& apex : config_.zones) {
    zones_.push_back(ZoneNames{
        apex, *dns::Name::FromLabels({"dns"}, apex), *dns::Name::FromLabels({"ns1", "dns"}, apex),
        *dns::Name::FromLabels({"hostmaster", "dns"}, apex), dns::IsReverseName(apex)});
    if (!ptr_zone_ && !zones_.back().reverse) ptr_zone_ = apex;
  }
}

bool ExternalAnswerer::ServesPtr(const Snapshot& snapshot, const dns::Name& lower) const {
  const auto ip = dns::AddressFromReverseName(lower);
  return ip && snapshot.ForEachExternalOwner(*ip, [](const ServiceName&) {}) > 0;
}

void ExternalAnswerer::AddNsAddresses(const Snapshot& snapshot, const dns::Name& owner,
                                      IpFamily family, Section section,
                                      dns::MessageBuilder& builder) const {
  if (config_.ns_service_name.empty()) return;
  const ServiceRecords* records =
      snapshot.FindService(config_.ns_service_namespace, config_.ns_service_name);
  const ServiceInfo* service = records != nullptr ? records->service() : nullptr;
  if (service == nullptr || service->external == nullptr) return;
  const std::vector<IpAddress>& ips = service->external->ips;
  if (std::none_of(ips.begin(), ips.end(),
                   [&](const IpAddress& ip) { return ip.family() == family; })) {
    return;
  }
  builder.BeginRrset(section);
  for (const IpAddress& ip : ips) {
    if (ip.family() == family) builder.AddAddress(owner, config_.ttl_s, ip);
  }
  (void)builder.EndRrset();
}

std::optional<size_t> ExternalAnswerer::ZoneOf(const dns::Name& lower) const {
  // The most specific zone wins when one is inside another.
  std::optional<size_t> best;
  for (size_t i = 0; i < zones_.size(); ++i) {
    if (!lower.IsSubdomainOf(zones_[i].apex)) continue;
    if (!best || zones_[i].apex.label_count() > zones_[*best].apex.label_count()) best = i;
  }
  return best;
}

dns::RdataSoa ExternalAnswerer::Soa(const ZoneNames& zone, uint32_t serial) const {
  dns::RdataSoa soa;
  soa.mname = zone.ns_name;
  soa.rname = zone.hostmaster;
  soa.serial = serial;
  soa.refresh_s = kRefreshS;
  soa.retry_s = kRetryS;
  soa.expire_s = kExpireS;
  soa.minimum_s = config_.ttl_s;
  return soa;
}

dns::Rcode ExternalAnswerer::Answer(size_t zone_index, const Snapshot& snapshot, uint32_t serial,
                                    const dns::Name& lower, const dns::Query& query,
                                    dns::MessageBuilder& builder,
                                    std::optional<dns::Name>* chase_target) const {
  const ZoneNames& zone = zones_[zone_index];
  const RrType qtype = query.qtype;
  const size_t depth = lower.label_count() - zone.apex.label_count();
  auto label = [&](size_t i) { return lower.label(i); };  // i-th from the left
  dns::Rcode rcode = dns::Rcode::kNxDomain;
  auto one = [&](RrType type, const dns::Rdata& rdata) {
    builder.BeginRrset(Section::kAnswer);
    builder.Add(query.qname, type, RrClass::kIn, config_.ttl_s, rdata);
    (void)builder.EndRrset();
  };

  if (depth == 0) {
    rcode = dns::Rcode::kNoError;
    if (qtype == RrType::kSoa) one(RrType::kSoa, Soa(zone, serial));
    if (qtype == RrType::kNs) {
      one(RrType::kNs, dns::RdataNs{zone.ns_name});
      for (IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
        AddNsAddresses(snapshot, zone.ns_name, family, Section::kAdditional, builder);
      }
    }
  } else if (lower.IsSubdomainOf(zone.dns)) {
    // dns.E and ns1.dns.E exist; nothing else under dns.E does.
    if (depth == 1 || (depth == 2 && label(0) == "ns1")) rcode = dns::Rcode::kNoError;
    if (depth == 2 && rcode == dns::Rcode::kNoError &&
        (qtype == RrType::kA || qtype == RrType::kAaaa)) {
      AddNsAddresses(snapshot, query.qname, qtype == RrType::kA ? IpFamily::kV4 : IpFamily::kV6,
                     Section::kAnswer, builder);
    }
  } else if (zone.reverse) {
    rcode = AnswerPtr(snapshot, lower, query, builder);
  } else if (depth == 1) {
    if (snapshot.HasNamespace(label(0))) rcode = dns::Rcode::kNoError;
  } else if (depth == 2 || depth == 4) {
    const ServiceRecords* records = snapshot.FindService(label(depth - 1), label(depth - 2));
    const ServiceInfo* service = records != nullptr ? records->service() : nullptr;
    if (service != nullptr && service->external != nullptr) {
      rcode = AnswerService(zone, *service->external, service->ports, lower, query, builder,
                            chase_target);
    }
  }
  const bool negative = builder.count(Section::kAnswer) == 0 || rcode == dns::Rcode::kNxDomain;
  if (negative && !builder.truncated()) {
    (void)builder.AddRecord(Section::kAuthority,
                            dns::ResourceRecord{zone.apex, RrType::kSoa, RrClass::kIn,
                                                config_.ttl_s, Soa(zone, serial)});
  }
  return rcode;
}

dns::Rcode ExternalAnswerer::AnswerPtr(const Snapshot& snapshot, const dns::Name& lower,
                                       const dns::Query& query,
                                       dns::MessageBuilder& builder) const {
  const bool v4 = lower.IsSubdomainOf(dns::InAddrArpa());
  const size_t address_labels = v4 ? 4 + 2 : 32 + 2;
  // Shorter than an address's name: a Service's address may lie below (RFC 8020), and
  // telling would take a walk of the index: NODATA.
  if (lower.label_count() < address_labels) return dns::Rcode::kNoError;
  const auto ip = dns::AddressFromReverseName(lower);
  if (!ip || !ptr_zone_) return dns::Rcode::kNxDomain;
  // One walk of the address's Services: PTR records for a PTR query; for another type only
  // whether there is one (NODATA) or none (NXDOMAIN).
  const bool ptr = query.qtype == RrType::kPtr;
  if (ptr) builder.BeginRrset(Section::kAnswer);
  const size_t owners = snapshot.ForEachExternalOwner(*ip, [&](const ServiceName& owner) {
    if (!ptr) return;
    if (auto target = dns::Name::FromLabels({owner.name, owner.ns}, *ptr_zone_)) {
      builder.Add(query.qname, RrType::kPtr, RrClass::kIn, config_.ttl_s, dns::RdataPtr{*target});
    }
  });
  if (ptr) (void)builder.EndRrset();
  return owners == 0 ? dns::Rcode::kNxDomain : dns::Rcode::kNoError;
}

dns::Rcode ExternalAnswerer::AnswerService(const ZoneNames& zone, const ExternalAddresses& external,
                                           const std::vector<k8s::ServicePort>& all_ports,
                                           const dns::Name& lower, const dns::Query& query,
                                           dns::MessageBuilder& builder,
                                           std::optional<dns::Name>* chase_target) const {
  const size_t depth = lower.label_count() - zone.apex.label_count();
  // _port._proto.svc.ns.E: that named port only.
  std::vector<k8s::ServicePort> ports;
  for (const k8s::ServicePort& port : all_ports) {
    // `lower` is lower case, as port names are (IANA service names).
    if (depth == 4 && !(WithoutUnderscore(lower.label(0)) == port.name &&
                        WithoutUnderscore(lower.label(1)) == ProtocolLabel(port.protocol))) {
      continue;
    }
    ports.push_back(port);
  }
  if (depth == 4 && ports.empty()) return dns::Rcode::kNxDomain;

  const RrType qtype = query.qtype;
  const dns::Name service_name = lower.StripLeft(depth - 2);  // svc.ns.E
  if (qtype == RrType::kA || qtype == RrType::kAaaa) {
    const IpFamily family = qtype == RrType::kA ? IpFamily::kV4 : IpFamily::kV6;
    const bool any_family = std::any_of(external.ips.begin(), external.ips.end(),
                                        [&](const IpAddress& ip) { return ip.family() == family; });
    if (any_family) {
      builder.BeginRrset(Section::kAnswer);
      for (const IpAddress& ip : external.ips) {
        if (ip.family() == family) builder.AddAddress(query.qname, config_.ttl_s, ip);
      }
      (void)builder.EndRrset();
    } else if (external.ips.empty() && !external.hostnames.empty()) {
      auto target = dns::Name::FromText(external.hostnames.front());
      if (!target) return dns::Rcode::kNoError;  // not a name: nothing to point at
      builder.BeginRrset(Section::kAnswer);
      builder.Add(query.qname, RrType::kCname, RrClass::kIn, config_.ttl_s,
                  dns::RdataCname{*target});
      (void)builder.EndRrset();
      *chase_target = *target;
    }
  } else if (qtype == RrType::kSrv && !ports.empty()) {
    // k8s_external: one entry per (address, port), weight 100 each, so every record's
    // weight is floor(100 * 100 / (100 * N)); duplicates of (target, port) are dropped.
    const size_t entries = (external.ips.size() + external.hostnames.size()) * ports.size();
    const auto weight = static_cast<uint16_t>(std::max<size_t>(1, 100 / entries));
    builder.BeginRrset(Section::kAnswer);
    for (const k8s::ServicePort& port : ports) {
      if (!external.ips.empty()) {
        builder.Add(query.qname, RrType::kSrv, RrClass::kIn, config_.ttl_s,
                    dns::RdataSrv{0, weight, port.port, service_name});
      }
      for (const std::string& hostname : external.hostnames) {
        if (auto target = dns::Name::FromText(hostname)) {
          builder.Add(query.qname, RrType::kSrv, RrClass::kIn, config_.ttl_s,
                      dns::RdataSrv{0, weight, port.port, *target});
        }
      }
    }
    (void)builder.EndRrset();
    for (IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
      bool any = std::any_of(external.ips.begin(), external.ips.end(),
                             [&](const IpAddress& ip) { return ip.family() == family; });
      if (!any) continue;
      builder.BeginRrset(Section::kAdditional);
      for (const IpAddress& ip : external.ips) {
        if (ip.family() == family) builder.AddAddress(service_name, config_.ttl_s, ip);
      }
      (void)builder.EndRrset();
    }
  }
  return dns::Rcode::kNoError;
}

}  // namespace kdns::kubedns

#include "frontend-cache/local_answers.h"

#include <algorithm>
#include <string>

#include "common/dns/builder.h"
#include "common/dns/reverse.h"

namespace kdns::frontend {

namespace {

// RFC 6303's zones (locally served: private and special-use addresses), as dnsmasq 2.90's
// --bogus-priv covers them (IPv6 site-local too, as its private_net6 does).
std::vector<std::string> PrivateReverseZones() {
  std::vector<std::string> zones = {"10.in-addr.arpa",
                                    "168.192.in-addr.arpa",
                                    "0.in-addr.arpa",
                                    "127.in-addr.arpa",
                                    "254.169.in-addr.arpa",
                                    "2.0.192.in-addr.arpa",
                                    "100.51.198.in-addr.arpa",
                                    "113.0.203.in-addr.arpa",
                                    "255.255.255.255.in-addr.arpa",
                                    "d.f.ip6.arpa",
                                    "8.e.f.ip6.arpa",
                                    "9.e.f.ip6.arpa",
                                    "a.e.f.ip6.arpa",
                                    "b.e.f.ip6.arpa",
                                    "c.e.f.ip6.arpa",
                                    "d.e.f.ip6.arpa",
                                    "e.e.f.ip6.arpa",
                                    "f.e.f.ip6.arpa",
                                    "8.b.d.0.1.0.0.2.ip6.arpa"};
  for (int octet = 16; octet <= 31; ++octet) {
    zones.push_back(std::to_string(octet) + ".172.in-addr.arpa");
  }
  // :: and ::1.
  std::string zeros;
  for (int i = 0; i < 31; ++i) zeros += "0.";
  zones.push_back("0." + zeros + "ip6.arpa");
  zones.push_back("1." + zeros + "ip6.arpa");
  return zones;
}

bool IsAddressQuery(dns::RrType qtype) {
  return qtype == dns::RrType::kA || qtype == dns::RrType::kAaaa;
}

}  // namespace

LocalAnswersConfig LocalAnswersConfig::From(const Options& options, std::vector<HostsEntry> hosts) {
  LocalAnswersConfig config;
  config.addresses = options.addresses;
  config.hosts = std::move(hosts);
  config.ttl_s = options.local_ttl_s;
  config.filter_aaaa = options.filter_aaaa;
  config.domain_needed = options.domain_needed;
  config.bogus_priv = options.bogus_priv;
  return config;
}

LocalAnswers::LocalAnswers(const LocalAnswersConfig& config)
    : ttl_s_(config.ttl_s),
      filter_aaaa_(config.filter_aaaa),
      domain_needed_(config.domain_needed),
      bogus_priv_(config.bogus_priv) {
  for (const HostsEntry& entry : config.hosts) {
    for (const dns::Name& name : entry.names) {
      std::vector<IpAddress>& addresses = hosts_[name.Lowercased()];
      if (std::find(addresses.begin(), addresses.end(), entry.address) == addresses.end()) {
        addresses.push_back(entry.address);
      }
    }
    std::vector<dns::Name>& names = reverse_[entry.address];
    if (std::find(names.begin(), names.end(), entry.names.front()) == names.end()) {
      names.push_back(entry.names.front());
    }
  }
  // Repeated --address options for one domain add up (dnsmasq: "use repeated --address
  // flags" for several addresses); /#/ is the root, the table's fallback.
  std::vector<AddressRoute> routes;
  AddressRoute fallback{dns::Name::Root(), {}};
  for (const AddressOption& option : config.addresses) {
    for (const dns::Name& domain : option.domains) {
      AddressRoute* route = &fallback;
      if (!domain.IsRoot()) {
        auto it = std::find_if(routes.begin(), routes.end(),
                               [&](const AddressRoute& r) { return r.domain == domain; });
        if (it == routes.end()) {
          routes.push_back(AddressRoute{domain, {}});
          it = routes.end() - 1;
        }
        route = &*it;
      }
      for (const IpAddress& address : option.addresses) {
        if (std::find(route->addresses.begin(), route->addresses.end(), address) ==
            route->addresses.end()) {
          route->addresses.push_back(address);
        }
      }
    }
  }
  address_routes_ = upstream::RouteTable<AddressRoute>(std::move(routes), std::move(fallback));
  if (bogus_priv_) {
    uint32_t index = 0;
    for (const std::string& zone : PrivateReverseZones()) {
      (void)private_reverse_zones_.Add(*dns::Name::FromText(zone), index++);
    }
  }
  empty_ = hosts_.empty() && config.addresses.empty() && !filter_aaaa_ && !domain_needed_ &&
           !bogus_priv_;
}

bool LocalAnswers::HasFamily(const std::vector<IpAddress>& addresses, dns::RrType qtype) {
  return std::any_of(addresses.begin(), addresses.end(), [&](const IpAddress& address) {
    return qtype == dns::RrType::kAny || (qtype == dns::RrType::kA) == address.is_v4();
  });
}

LocalAnswer LocalAnswers::Lookup(const dns::Name& qname, dns::RrType qtype,
                                 const dns::Name& route_domain, bool default_route) const {
  using Kind = LocalAnswer::Kind;
  using Reason = LocalAnswer::Reason;
  if (empty_) return {};
  // Hosts files first: they override everything, --filter-AAAA included (as in dnsmasq).
  const std::vector<IpAddress>* hosts = nullptr;
  if (!hosts_.empty()) {
    if (auto it = hosts_.find(qname); it != hosts_.end()) hosts = &it->second;
  }
  if (hosts != nullptr && (IsAddressQuery(qtype) || qtype == dns::RrType::kAny) &&
      HasFamily(*hosts, qtype)) {
    return {Kind::kRecords, Reason::kHosts, true, hosts, nullptr};
  }
  if (qtype == dns::RrType::kPtr && !reverse_.empty()) {
    if (std::optional<IpAddress> address = dns::AddressFromReverseName(qname)) {
      if (auto it = reverse_.find(*address); it != reverse_.end()) {
        return {Kind::kRecords, Reason::kHosts, true, nullptr, &it->second};
      }
    }
  }
  if (IsAddressQuery(qtype)) {
    const AddressRoute& rule = address_routes_.Lookup(qname);
    if (!rule.addresses.empty() && rule.domain.label_count() >= route_domain.label_count() &&
        HasFamily(rule.addresses, qtype)) {
      return {Kind::kRecords, Reason::kAddress, true, &rule.addresses, nullptr};
    }
  }
  if (filter_aaaa_ && qtype == dns::RrType::kAaaa) {
    return {Kind::kNoData, Reason::kFilterAaaa, false, nullptr, nullptr};
  }
  if (domain_needed_ && IsAddressQuery(qtype) && qname.label_count() == 1) {
    return {hosts != nullptr ? Kind::kNoData : Kind::kNxDomain, Reason::kDomainNeeded, false,
            nullptr, nullptr};
  }
  if (bogus_priv_ && default_route && (qtype == dns::RrType::kPtr || qtype == dns::RrType::kAny) &&
      private_reverse_zones_.Find(qname)) {
    return {Kind::kNxDomain, Reason::kBogusPriv, true, nullptr, nullptr};
  }
  return {};
}

void LocalAnswers::ClearNxDomainOfKnownName(const dns::Name& qname,
                                            std::span<uint8_t> response) const {
  if (empty_ || response.size() < dns::kHeaderSize ||
      (response[3] & 0x0f) != static_cast<uint8_t>(dns::Rcode::kNxDomain)) {
    return;
  }
  if (hosts_.contains(qname) || !address_routes_.Lookup(qname).addresses.empty()) {
    response[3] &= 0xf0;  // NOERROR
  }
}

size_t LocalAnswers::Write(const LocalAnswer& answer, const dns::Query& query,
                           std::span<uint8_t> out, size_t limit_bytes) const {
  dns::MessageBuilder builder(out, std::min(limit_bytes, out.size()));
  if (builder.StartResponse(query) != dns::BuildError::kOk) return 0;
  builder.header().ra = true;
  builder.header().aa = answer.aa;
  builder.header().rcode =
      answer.kind == LocalAnswer::Kind::kNxDomain ? dns::Rcode::kNxDomain : dns::Rcode::kNoError;
  if (query.edns) (void)builder.SetEdns(dns::EdnsView{});
  if (answer.kind == LocalAnswer::Kind::kRecords) {
    if (answer.addresses != nullptr) {
      // A before AAAA for ANY, each in the order configured; one RRset each.
      for (const bool v4 : {true, false}) {
        const dns::RrType type = v4 ? dns::RrType::kA : dns::RrType::kAaaa;
        if (query.qtype != dns::RrType::kAny && query.qtype != type) continue;
        builder.BeginRrset(dns::Section::kAnswer);
        for (const IpAddress& address : *answer.addresses) {
          if (address.is_v4() != v4) continue;
          if (v4) {
            builder.Add(query.qname, type, dns::RrClass::kIn, ttl_s_, dns::RdataA{address});
          } else {
            builder.Add(query.qname, type, dns::RrClass::kIn, ttl_s_, dns::RdataAaaa{address});
          }
        }
        (void)builder.EndRrset();  // kNoSpace: TC is set, the client retries over TCP
      }
    } else if (answer.ptr_targets != nullptr) {
      builder.BeginRrset(dns::Section::kAnswer);
      for (const dns::Name& target : *answer.ptr_targets) {
        builder.Add(query.qname, dns::RrType::kPtr, dns::RrClass::kIn, ttl_s_,
                    dns::RdataPtr{target});
      }
      (void)builder.EndRrset();
    }
  }
  return builder.Finish().size();
}

}  // namespace kdns::frontend

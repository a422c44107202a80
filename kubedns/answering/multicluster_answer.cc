#include "kubedns/answering/multicluster_answer.h"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace kdns::kubedns {
namespace {

using dns::RrClass;
using dns::RrType;
using dns::Section;

constexpr uint32_t kVersionTtl = 28800;  // as the cluster zone's dns-version

bool WantsFamily(RrType qtype, IpFamily family) {
  if (qtype == RrType::kAny) return true;
  return family == IpFamily::kV4 ? qtype == RrType::kA : qtype == RrType::kAaaa;
}

dns::Rdata AddressRdata(const IpAddress& ip) {
  if (ip.is_v4()) return dns::RdataA{ip};
  return dns::RdataAaaa{ip};
}

RrType AddressType(const IpAddress& ip) { return ip.is_v4() ? RrType::kA : RrType::kAaaa; }

bool IsUnderscored(std::string_view label) { return label.size() > 1 && label[0] == '_'; }

}  // namespace

// The question and the builder, with the helpers every rule uses.
class MulticlusterAnswerer::Writer {
 public:
  Writer(dns::MessageBuilder& builder, const dns::Query& query)
      : builder_(builder), query_(query) {}

  RrType qtype() const { return query_.qtype; }
  const dns::Name& owner() const { return query_.qname; }
  dns::MessageBuilder& builder() { return builder_; }
  uint16_t answers() const { return builder_.count(Section::kAnswer); }

  // The addresses of `ips` the question asks for, one RRset per family; for ANY only the
  // first family that has any (RFC 8482).
  template <class Items, class IpOf>
  void Addresses(const dns::Name& owner, Section section, const Items& items, IpOf&& ip_of,
                 uint32_t ttl_s, RrType qtype) {
    for (IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
      if (!WantsFamily(qtype, family)) continue;
      bool any = std::any_of(std::begin(items), std::end(items),
                             [&](const auto& item) { return ip_of(item).family() == family; });
      if (!any) continue;
      builder_.BeginRrset(section);
      for (const auto& item : items) {
        const IpAddress& ip = ip_of(item);
        if (ip.family() == family) {
          builder_.Add(owner, AddressType(ip), RrClass::kIn, ttl_s, AddressRdata(ip));
        }
      }
      (void)builder_.EndRrset();
      if (qtype == RrType::kAny) return;
    }
  }

  template <class Rdata>
  void One(RrType type, uint32_t ttl_s, const Rdata& rdata) {
    builder_.BeginRrset(Section::kAnswer);
    builder_.Add(owner(), type, RrClass::kIn, ttl_s, rdata);
    (void)builder_.EndRrset();
  }

 private:
  dns::MessageBuilder& builder_;
  const dns::Query& query_;
};

MulticlusterAnswerer::MulticlusterAnswerer(const MulticlusterConfig& config) : config_(config) {
  auto names = [](const dns::Name& apex) {
    return ZoneNames{apex, *dns::Name::FromLabels({"ns", "dns"}, apex),
                     *dns::Name::FromLabels({"hostmaster"}, apex)};
  };
  if (config_.mcs_zone) mcs_ = names(*config_.mcs_zone);
  if (config_.kubeslice_zone) kubeslice_ = names(*config_.kubeslice_zone);
  version_txt_.strings = {"1.0.0"};  // KEP-1645's DNS specification version
}

MulticlusterAnswerer::Zone MulticlusterAnswerer::ZoneOf(const dns::Name& lower) const {
  if (mcs_ && lower.IsSubdomainOf(mcs_->apex)) return Zone::kMcs;
  if (kubeslice_ && lower.IsSubdomainOf(kubeslice_->apex)) return Zone::kKubeslice;
  return Zone::kNone;
}

dns::RdataSoa MulticlusterAnswerer::Soa(const ZoneNames& zone, uint32_t serial) const {
  return ZoneSoa(zone.ns_name, zone.hostmaster, serial, config_.soa);
}

dns::Rcode MulticlusterAnswerer::Answer(Zone zone, const MulticlusterSnapshot* snapshot,
                                        uint32_t serial, const dns::Name& lower,
                                        const dns::Query& query,
                                        dns::MessageBuilder& builder) const {
  const ZoneNames* names = zone == Zone::kMcs ? &*mcs_ : &*kubeslice_;
  const bool synced = snapshot != nullptr &&
                      (zone == Zone::kMcs ? snapshot->mcs_synced() : snapshot->kubeslice_synced());
  if (!synced) return dns::Rcode::kServFail;  // not known yet: no answer is better
  Writer out(builder, query);
  const RrType qtype = query.qtype;
  dns::Rcode rcode = dns::Rcode::kNoError;
  if (lower.label_count() == names->apex.label_count()) {
    if (qtype == RrType::kSoa || qtype == RrType::kAny) {
      out.One(RrType::kSoa, config_.ttl_s, Soa(*names, serial));
    } else if (qtype == RrType::kNs) {
      out.One(RrType::kNs, config_.ttl_s, dns::RdataNs{names->ns_name});
    }
  } else if (zone == Zone::kMcs) {
    rcode = AnswerMcs(*snapshot, lower, out);
  } else {
    rcode = AnswerKubeslice(*snapshot, lower, out);
  }
  bool negative = out.answers() == 0 || rcode == dns::Rcode::kNxDomain;
  if (negative && !builder.truncated()) {
    // NODATA or NXDOMAIN: the zone's SOA, its TTL the negative TTL (RFC 2308 section 3).
    (void)builder.AddRecord(Section::kAuthority,
                            dns::ResourceRecord{names->apex, RrType::kSoa, RrClass::kIn,
                                                config_.soa.minimum_s, Soa(*names, serial)});
  }
  return rcode;
}

dns::Rcode MulticlusterAnswerer::AnswerMcs(const MulticlusterSnapshot& snapshot,
                                           const dns::Name& lower, Writer& out) const {
  const RrType qtype = out.qtype();
  const size_t depth = lower.label_count() - mcs_->apex.label_count();
  auto label = [&](size_t i) { return lower.label(i); };
  constexpr dns::Rcode kNoData = dns::Rcode::kNoError;
  constexpr dns::Rcode kNxDomain = dns::Rcode::kNxDomain;
  std::string_view top = label(depth - 1);

  if (top == "dns-version") {
    if (depth != 1) return kNxDomain;
    if (qtype == RrType::kTxt || qtype == RrType::kAny) {
      out.One(RrType::kTxt, kVersionTtl, version_txt_);
    }
    return kNoData;
  }
  if (top != "svc") return kNxDomain;
  if (depth == 1) return kNoData;
  if (depth == 2) return snapshot.HasImportNamespace(label(0)) ? kNoData : kNxDomain;
  const std::string_view ns = label(depth - 2);
  const std::string_view name = label(depth - 3);
  const McsImportRecords* records = snapshot.FindImport(ns, name);
  if (records == nullptr || !records->answerable() || depth > 5) return kNxDomain;
  // A headless import without a ready endpoint is NXDOMAIN (KEP-1645's DNS specification,
  // 2.4.1), and so is every name below it: NXDOMAIN means nothing below exists (RFC 8020),
  // so an SRV name of its ports cannot answer NODATA.
  if (records->headless() && records->hosts().empty()) return kNxDomain;
  const k8s::ServiceImport& import = *records->import();
  auto import_name = dns::Name::FromLabels({name, ns, "svc"}, mcs_->apex);
  if (!import_name) return kNxDomain;  // cannot happen: it came from a question
  auto host_name = [&](const McsImportRecords::Host& host) {
    auto full = dns::Name::FromLabels({host.label, host.cluster}, *import_name);
    return full ? *full : *import_name;
  };

  // SRV records to `targets` (host indexes; none: the import name itself) with the targets'
  // addresses in the additional section.
  auto answer_srv = [&](auto&& for_each_target) {
    size_t count = 0;
    for_each_target([&](const McsImportRecords::Host*, uint16_t) { ++count; });
    if (count == 0) return;
    const uint16_t weight = static_cast<uint16_t>(100 / count);
    out.builder().BeginRrset(Section::kAnswer);
    for_each_target([&](const McsImportRecords::Host* host, uint16_t port) {
      out.builder().Add(out.owner(), RrType::kSrv, RrClass::kIn, config_.ttl_s,
                        dns::RdataSrv{10, weight, port, host ? host_name(*host) : *import_name});
    });
    if (out.builder().EndRrset() != dns::BuildError::kOk) return;
    for_each_target([&](const McsImportRecords::Host* host, uint16_t) {
      if (host == nullptr) {
        out.Addresses(
            *import_name, Section::kAdditional, import.ips,
            [](const IpAddress& ip) -> const IpAddress& { return ip; }, config_.ttl_s, RrType::kA);
        out.Addresses(
            *import_name, Section::kAdditional, import.ips,
            [](const IpAddress& ip) -> const IpAddress& { return ip; }, config_.ttl_s,
            RrType::kAaaa);
      } else {
        auto hosts = records->FindHosts(host->cluster, host->label);
        auto ip_of = [](const McsImportRecords::Host& h) -> const IpAddress& { return h.ip; };
        dns::Name glue = host_name(*host);
        out.Addresses(glue, Section::kAdditional, hosts, ip_of, config_.ttl_s, RrType::kA);
        out.Addresses(glue, Section::kAdditional, hosts, ip_of, config_.ttl_s, RrType::kAaaa);
      }
    });
  };
  // One target per (cluster, label): a v4 and a v6 address of one endpoint share a name.
  auto for_each_host_name = [&](auto&& visit) {
    const McsImportRecords::Host* last = nullptr;
    for (const auto& host : records->hosts()) {
      if (last == nullptr || host.cluster != last->cluster || host.label != last->label) {
        visit(&host);
      }
      last = &host;
    }
  };

  if (depth == 3) {
    if (qtype == RrType::kSrv) {
      // As in the cluster zone: one SRV per address entry, port 0.
      answer_srv([&](auto&& visit) {
        if (!records->headless()) {
          if (!import.ips.empty()) visit(nullptr, uint16_t{0});
          return;
        }
        for_each_host_name([&](const McsImportRecords::Host* host) { visit(host, uint16_t{0}); });
      });
      return kNoData;
    }
    if (records->headless()) {
      out.Addresses(
          out.owner(), Section::kAnswer, records->addresses(),
          [](const IpAddress& ip) -> const IpAddress& { return ip; }, config_.ttl_s, qtype);
    } else {
      out.Addresses(
          out.owner(), Section::kAnswer, import.ips,
          [](const IpAddress& ip) -> const IpAddress& { return ip; }, config_.ttl_s, qtype);
    }
    return kNoData;
  }
  if (depth == 4) {
    std::string_view first = label(0);
    if (IsUnderscored(first) && records->HasSrvProtocol(first.substr(1))) return kNoData;
    if (records->headless() && records->HasCluster(first)) return kNoData;  // cluster.svc...
    return kNxDomain;
  }
  // depth 5: _port._proto.svc.ns.svc.Zm, or host.cluster.svc.ns.svc.Zm.
  if (IsUnderscored(label(0)) && IsUnderscored(label(1))) {
    const auto* set = records->FindSrv(label(0).substr(1), label(1).substr(1));
    if (set == nullptr) return kNxDomain;
    if (qtype != RrType::kSrv && qtype != RrType::kAny) return kNoData;
    answer_srv([&](auto&& visit) {
      if (!records->headless()) {
        if (!import.ips.empty()) visit(nullptr, set->port);
        return;
      }
      for_each_host_name([&](const McsImportRecords::Host* host) {
        visit(host, records->TargetPort(*set, host->cluster));
      });
    });
    return kNoData;
  }
  if (!records->headless()) return kNxDomain;
  auto hosts = records->FindHosts(label(1), label(0));
  if (hosts.empty()) return kNxDomain;
  out.Addresses(
      out.owner(), Section::kAnswer, hosts,
      [](const McsImportRecords::Host& host) -> const IpAddress& { return host.ip; }, config_.ttl_s,
      qtype);
  return kNoData;
}

dns::Rcode MulticlusterAnswerer::AnswerKubeslice(const MulticlusterSnapshot& snapshot,
                                                 const dns::Name& lower, Writer& out) const {
  const std::vector<IpAddress>* ips = snapshot.FindKubesliceName(lower);
  if (ips == nullptr) return dns::Rcode::kNxDomain;
  out.Addresses(
      out.owner(), Section::kAnswer, *ips,
      [](const IpAddress& ip) -> const IpAddress& { return ip; }, config_.kubeslice_ttl_s,
      out.qtype());
  return dns::Rcode::kNoError;  // NODATA when no address of the asked family
}

}  // namespace kdns::kubedns

#include "kubedns/answering/answerer.h"

#include <glog/logging.h>

#include <algorithm>
#include <array>
#include <string>

#include "common/dns/builder.h"
#include "common/dns/reverse.h"

namespace kdns::kubedns {

namespace {

using dns::RrClass;
using dns::RrType;
using dns::Section;

constexpr int kMaxChaseDepth = 8;
constexpr uint32_t kVersionTtl = 28800;
// The negative answers' SOA in wire form: three pointers, "ns", "dns", "hostmaster" and the
// fixed fields (54 bytes).
constexpr size_t kSoaTemplateMaxSize = 64;

bool WantsAddress(RrType qtype, IpFamily family) {
  if (qtype == RrType::kAny) return true;
  return family == IpFamily::kV4 ? qtype == RrType::kA : qtype == RrType::kAaaa;
}

// RFC 8482 section 4.2: ANY is answered with one RRset the name has (here the A records, or
// the AAAA records of a name without IPv4 ones), never with all of them, so ANY never costs
// more than the largest single-type question. Over TCP too (section 4.4 would allow the
// full answer there): one rule is simpler to reason about.
bool AnsweredEnough(RrType qtype) { return qtype == RrType::kAny; }

dns::Rdata AddressRdata(const IpAddress& ip) {
  if (ip.is_v4()) return dns::RdataA{ip};
  return dns::RdataAaaa{ip};
}

RrType AddressType(const IpAddress& ip) { return ip.is_v4() ? RrType::kA : RrType::kAaaa; }

// "10-244-1-5" or "fd00-10-244--12" back to an address; nullopt for anything else.
std::optional<IpAddress> ParseDashed(std::string_view dashed) {
  if (dashed.empty() || dashed.size() > 45) return std::nullopt;
  std::string text(dashed);
  // Three dashes usually mean v4, but a short v6 form has three too ("fd00--7-1").
  if (std::count(text.begin(), text.end(), '-') == 3) {
    std::replace(text.begin(), text.end(), '-', '.');
    auto ip = IpAddress::Parse(text);
    if (ip && ip->is_v4()) return ip;
    text = dashed;
  }
  std::replace(text.begin(), text.end(), '-', ':');
  auto ip = IpAddress::Parse(text);
  if (ip && ip->is_v6()) return ip;
  return std::nullopt;
}

}  // namespace

// The response under construction: the builder plus what the answer rules need to know.
class Answerer::Response {
 public:
  Response(std::span<uint8_t> buffer, size_t limit, const dns::Query& asked)
      : builder(buffer, limit), query(asked) {}

  // Adds one RRset to the answer section.
  template <class F>
  void AnswerRrset(F&& add) {
    builder.BeginRrset(Section::kAnswer);
    add();
    (void)builder.EndRrset();
  }
  uint16_t answers() const { return builder.count(Section::kAnswer); }

  dns::MessageBuilder builder;
  const dns::Query& query;
  dns::Rcode rcode = dns::Rcode::kNoError;
  std::optional<dns::Name> chase_target;  // an ExternalName chain left the zone here
  ZonalDirective zonal_directive = ZonalDirective::kNone;
  ZonalOutcome zonal_outcome = ZonalOutcome::kZone;
};

namespace {

MulticlusterConfig MulticlusterConfigOf(const AnswerConfig& config) {
  MulticlusterConfig multicluster;
  multicluster.mcs_zone = config.multicluster_zone;
  multicluster.kubeslice_zone = config.kubeslice_zone;
  multicluster.ttl_s = config.ttl_s;
  multicluster.soa = config.soa;
  return multicluster;
}

}  // namespace

Answerer::Answerer(const AnswerConfig& config)
    : config_(config), multicluster_(MulticlusterConfigOf(config)), external_(config.external) {
  ns_name_ = *dns::Name::FromLabels({"ns", "dns"}, config_.zone);
  hostmaster_ = *dns::Name::FromLabels({"hostmaster"}, config_.zone);
  version_txt_.strings = {"1.1.0"};
  if (!config_.zone.IsRoot()) {
    // Written once by the builder after a question for Z itself, whose name sits at the
    // header's end: the pointers to it are the ones to patch.
    std::vector<uint8_t> buffer(dns::kMaxUdpSizeWithoutEdns);
    dns::MessageBuilder builder(buffer);
    const size_t start = dns::kHeaderSize + config_.zone.wire_length() + 4;
    if (builder.AddQuestion(config_.zone, RrType::kSoa, RrClass::kIn) == dns::BuildError::kOk &&
        builder.AddRecord(Section::kAuthority,
                          dns::ResourceRecord{config_.zone, RrType::kSoa, RrClass::kIn,
                                              config_.soa.minimum_s, Soa(0)}) ==
            dns::BuildError::kOk) {
      std::span<const uint8_t> message = builder.Finish();
      CHECK_LE(message.size() - start, kSoaTemplateMaxSize);  // its size does not depend on Z
      soa_template_.assign(message.begin() + static_cast<ptrdiff_t>(start), message.end());
      const size_t zone_length = config_.zone.wire_length();
      // owner (2), type, class, TTL, RDLENGTH (10), MNAME's own labels, pointer, ...
      soa_mname_pointer_ = 12 + ns_name_.wire_length() - zone_length;
      soa_rname_pointer_ = soa_mname_pointer_ + 2 + hostmaster_.wire_length() - zone_length;
      soa_serial_ = soa_rname_pointer_ + 2;
    }
  }
}

uint32_t Answerer::SoaSerial(const Snapshot& snapshot) const {
  return config_.soa_serial_base + static_cast<uint32_t>(snapshot.records_version());
}

std::vector<dns::Name> Answerer::ServedZones() const {
  std::vector<dns::Name> zones = {config_.zone.Lowercased(), dns::InAddrArpa(), dns::Ip6Arpa()};
  if (config_.multicluster_zone) zones.push_back(*config_.multicluster_zone);
  if (config_.kubeslice_zone) zones.push_back(*config_.kubeslice_zone);
  for (const dns::Name& zone : config_.external.zones) zones.push_back(zone);
  return zones;
}

dns::RdataSoa Answerer::Soa(uint32_t serial) const {
  return ZoneSoa(ns_name_, hostmaster_, serial, config_.soa);
}

AnswerResult Answerer::Answer(const Snapshot* snapshot, const server::Admission& admission,
                              std::span<uint8_t> buffer) const {
  AnswerResult result;
  const dns::Query& query = admission.query;
  switch (admission.verdict) {
    case server::Verdict::kAdmitted:
      break;
    case server::Verdict::kDrop:
      return result;
    case server::Verdict::kFormErr:
      result.kind = AnswerKind::kFormErr;
      result.rcode = dns::Rcode::kFormErr;
      result.response = server::WriteRefusal(admission, buffer);
      return result;
    case server::Verdict::kBadVers:
    case server::Verdict::kNotImp:
    case server::Verdict::kRefused:  // other classes; no zone transfers of the cluster
      result.qtype = query.qtype;
      result.response = server::WriteRefusal(admission, buffer);
      if (result.response.empty()) return result;  // dropped; cannot happen
      result.kind = AnswerKind::kAnswered;
      result.rcode = server::RefusalRcode(admission.verdict);
      return result;
  }
  result.qtype = query.qtype;

  Response response(buffer, admission.reply_limit_bytes, query);
  if (response.builder.StartResponse(query) != dns::BuildError::kOk) return result;
  response.builder.header().ra = true;  // names outside the zone are resolved for clients
  if (query.edns) (void)response.builder.SetEdns(dns::EdnsView{});
  result.kind = AnswerKind::kAnswered;

  dns::Name lower = query.qname.Lowercased();
  result.reverse = IsReverse(lower);
  if (lower.IsSubdomainOf(config_.zone)) {
    response.builder.header().aa = true;
    if (snapshot == nullptr || !snapshot->synced()) {
      response.rcode = dns::Rcode::kServFail;  // not synced yet: no answer is better
    } else {
      AnswerZone(*snapshot, lower, response);
    }
  } else if (auto zone = multicluster_.ZoneOf(lower); zone != MulticlusterAnswerer::Zone::kNone) {
    response.builder.header().aa = true;
    response.rcode = multicluster_.Answer(
        zone, snapshot == nullptr ? nullptr : &snapshot->multicluster(),
        snapshot == nullptr ? 0 : SoaSerial(*snapshot), lower, query, response.builder);
  } else if (auto external_zone = external_.ZoneOf(lower)) {
    response.builder.header().aa = true;
    if (snapshot == nullptr || !snapshot->synced()) {
      response.rcode = dns::Rcode::kServFail;  // not synced yet, as the cluster zone
    } else if (result.reverse && !external_.ServesPtr(*snapshot, lower) &&
               AnswerReverse(*snapshot, lower, response)) {
      // a reverse external zone: an address that is no Service's external one keeps its
      // cluster PTR
    } else {
      response.rcode = external_.Answer(*external_zone, *snapshot, SoaSerial(*snapshot), lower,
                                        query, response.builder, &response.chase_target);
    }
  } else if (result.reverse && (snapshot == nullptr || !snapshot->synced())) {
    response.rcode = dns::Rcode::kServFail;  // is the IP a cluster's? Not known yet.
  } else if (result.reverse && AnswerReverse(*snapshot, lower, response)) {
    // answered from the reverse index
  } else {
    result.kind = AnswerKind::kNotOurs;
    response.rcode = dns::Rcode::kRefused;
  }
  response.builder.header().rcode = response.rcode;
  result.rcode = response.rcode;
  result.truncated = response.builder.truncated();
  result.response = response.builder.Finish();
  result.zonal_directive = response.zonal_directive;
  result.zonal_outcome = response.zonal_outcome;
  if (response.chase_target && !result.truncated && response.rcode == dns::Rcode::kNoError) {
    result.kind = AnswerKind::kExternalTarget;
    result.chase_target = *response.chase_target;
  }
  return result;
}

void Answerer::AnswerZone(const Snapshot& snapshot, const dns::Name& lower,
                          Response& response) const {
  const RrType qtype = response.query.qtype;
  const size_t depth = lower.label_count() - config_.zone.label_count();
  auto label = [&](size_t i) { return lower.label(i); };  // i-th label from the left
  auto no_data = [&] { response.rcode = dns::Rcode::kNoError; };
  auto nx_domain = [&] { response.rcode = dns::Rcode::kNxDomain; };
  const dns::Name& owner = response.query.qname;

  if (depth == 0) {
    if (qtype == RrType::kSoa || qtype == RrType::kAny) {
      response.AnswerRrset([&] {
        response.builder.Add(owner, RrType::kSoa, RrClass::kIn, config_.ttl_s,
                             Soa(SoaSerial(snapshot)));
      });
    } else if (qtype == RrType::kNs) {
      response.AnswerRrset([&] {
        response.builder.Add(owner, RrType::kNs, RrClass::kIn, config_.ttl_s,
                             dns::RdataNs{ns_name_});
      });
    }
  } else {
    std::string_view top = label(depth - 1);
    if (top == "dns-version" && depth == 1) {
      if (qtype == RrType::kTxt || qtype == RrType::kAny) {
        response.AnswerRrset([&] {
          response.builder.Add(owner, RrType::kTxt, RrClass::kIn, kVersionTtl, version_txt_);
        });
      }
    } else if (top == "svc") {
      if (depth == 1) {
        no_data();
      } else if (depth == 2) {
        snapshot.HasNamespace(label(0)) ? no_data() : nx_domain();
      } else if (config_.zonal && depth >= 6 && label(depth - 4) == "_zone") {
        AnswerZonal(snapshot, lower, depth, response);
      } else {
        std::string_view ns = label(depth - 2);
        std::string_view name = label(depth - 3);
        // _port._proto.svc.ns.svc.Z is the deepest name; anything else that deep is not.
        bool srv_name = depth == 5 && label(0).size() > 1 && label(0)[0] == '_' &&
                        label(1).size() > 1 && label(1)[0] == '_';
        // The shape first: a search-path miss (svc.ns.svc.Z.ns.svc.Z) costs no lookup.
        const bool shaped = depth < 5 || (depth == 5 && srv_name);
        const ServiceRecords* records = shaped ? snapshot.FindService(ns, name) : nullptr;
        if (records == nullptr || !records->answerable()) {
          nx_domain();
        } else if (depth == 3) {
          AnswerService(snapshot, *records, owner, ns, name, response, 0);
        } else if (depth == 4) {
          std::string_view first = label(0);
          if (first.size() > 1 && first[0] == '_' && records->HasSrvProtocol(first.substr(1))) {
            no_data();  // _proto.svc.ns.svc.Z: a parent of SRV names
          } else {
            auto hosts = records->headless() ? records->FindHost(first)
                                             : std::span<const ServiceRecords::Host>();
            if (hosts.empty()) {
              nx_domain();
            } else {
              AnswerHosts(hosts, owner, response);
            }
          }
        } else {
          const auto* set = records->FindSrv(label(0).substr(1), label(1).substr(1));
          if (set == nullptr) {
            nx_domain();
          } else if (qtype == RrType::kSrv || qtype == RrType::kAny) {
            AnswerSrv(*records, set, ns, name, response);
          }
        }
      }
    } else if (top == "pod" && config_.pod_records != PodRecords::kDisabled) {
      if (depth <= 2) {
        no_data();
      } else if (depth == 3) {
        AnswerPod(snapshot, label(1), label(0), owner, response);
      } else {
        nx_domain();
      }
    } else {
      nx_domain();
    }
  }
  bool negative = response.answers() == 0 || response.rcode == dns::Rcode::kNxDomain;
  if (negative && !response.builder.truncated()) AddNegativeSoa(snapshot, lower, depth, response);
}

void Answerer::AddNegativeSoa(const Snapshot& snapshot, const dns::Name& lower, size_t depth,
                              Response& response) const {
  // The template holds when the builder would write what it holds: nothing after the
  // question yet (so Z's first occurrence is the question's), and no dns.Z or hostmaster.Z
  // in the question for MNAME or RNAME to point at instead.
  const bool prepared =
      config_.writing == AnswerConfig::Writing::kPrepared && !soa_template_.empty() &&
      response.answers() == 0 && response.builder.count(Section::kAuthority) == 0 &&
      response.builder.count(Section::kAdditional) == 0 &&
      (depth == 0 || (lower.label(depth - 1) != "dns" && lower.label(depth - 1) != "hostmaster"));
  if (prepared) {
    std::array<uint8_t, kSoaTemplateMaxSize> record;
    std::copy(soa_template_.begin(), soa_template_.end(), record.begin());
    const size_t zone_at = dns::kHeaderSize + lower.LabelOffset(depth);
    const uint8_t pointer[2] = {static_cast<uint8_t>(0xC0 | zone_at >> 8),
                                static_cast<uint8_t>(zone_at)};
    for (size_t at : {size_t{0}, soa_mname_pointer_, soa_rname_pointer_}) {
      record[at] = pointer[0];
      record[at + 1] = pointer[1];
    }
    const uint32_t serial = SoaSerial(snapshot);
    for (size_t i = 0; i < 4; ++i)
      record[soa_serial_ + i] = static_cast<uint8_t>(serial >> (24 - 8 * i));
    (void)response.builder.AddEncodedRecord(
        Section::kAuthority, std::span<const uint8_t>(record.data(), soa_template_.size()));
    return;
  }
  // NODATA or NXDOMAIN (also at the end of a CNAME chain): the SOA in the authority
  // section, its TTL the negative TTL (RFC 2308 sections 2.1 and 3).
  (void)response.builder.AddRecord(
      Section::kAuthority, dns::ResourceRecord{config_.zone, RrType::kSoa, RrClass::kIn,
                                               config_.soa.minimum_s, Soa(SoaSerial(snapshot))});
}

void Answerer::AnswerHosts(std::span<const ServiceRecords::Host> hosts, const dns::Name& owner,
                           Response& response, HostFilter filter) const {
  const RrType qtype = response.query.qtype;
  for (IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
    if (!WantsAddress(qtype, family)) continue;
    auto wanted = [&](const ServiceRecords::Host& host) {
      return host.ip.family() == family && filter.Keeps(host);
    };
    if (std::none_of(hosts.begin(), hosts.end(), wanted)) continue;
    response.AnswerRrset([&] {
      for (const auto& host : hosts) {
        if (wanted(host)) response.builder.AddAddress(owner, config_.ttl_s, host.ip);
      }
    });
    if (AnsweredEnough(qtype)) return;
  }
}

void Answerer::AnswerService(const Snapshot& snapshot, const ServiceRecords& records,
                             const dns::Name& owner, std::string_view ns, std::string_view name,
                             Response& response, int depth) const {
  const ServiceInfo& service = *records.service();
  const RrType qtype = response.query.qtype;
  if (service.kind == ServiceInfo::Kind::kExternalName) {
    auto target = dns::Name::FromText(service.external_name + ".");
    if (!target) {
      response.rcode = dns::Rcode::kServFail;  // an invalid externalName in the API
      return;
    }
    response.AnswerRrset([&] {
      response.builder.Add(owner, RrType::kCname, RrClass::kIn, config_.ttl_s,
                           dns::RdataCname{*target});
    });
    if (qtype == RrType::kCname || qtype == RrType::kAny) return;
    dns::Name lower = target->Lowercased();
    if (lower.IsSubdomainOf(config_.zone)) {
      Chase(snapshot, lower, response, depth + 1);
    } else if (!response.builder.truncated()) {
      response.chase_target = *target;  // the server asks an upstream for the rest
    }
    return;
  }

  if (qtype == RrType::kSrv) {
    // svc.ns.svc.Z SRV: one record per address entry, port 0 (kube-dns's behaviour, which
    // the sidecar's SRV probe relies on).
    AnswerSrv(records, nullptr, ns, name, response);
    return;
  }
  if (service.kind == ServiceInfo::Kind::kClusterIP) {
    for (IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
      if (!WantsAddress(qtype, family)) continue;
      bool any = std::any_of(service.cluster_ips.begin(), service.cluster_ips.end(),
                             [&](const IpAddress& ip) { return ip.family() == family; });
      if (!any) continue;
      response.AnswerRrset([&] {
        for (const auto& ip : service.cluster_ips) {
          if (ip.family() == family) response.builder.AddAddress(owner, config_.ttl_s, ip);
        }
      });
      if (AnsweredEnough(qtype)) return;
    }
    return;
  }
  // Headless: the ready endpoints; a name with none at all does not exist.
  if (records.hosts().empty()) {
    response.rcode = dns::Rcode::kNxDomain;
    return;
  }
  AnswerHosts(records.hosts(), owner, response);
}

void Answerer::AnswerSrv(const ServiceRecords& records, const ServiceRecords::SrvSet* set,
                         std::string_view ns, std::string_view name, Response& response,
                         HostFilter filter) const {
  const dns::Name& owner = response.query.qname;
  auto service_name = dns::Name::FromLabels({name, ns, "svc"}, config_.zone);
  if (!service_name) return;
  const ServiceInfo& service = *records.service();

  // The targets, (host label, or empty for the service name itself; port), visited without
  // building a list: this runs per query.
  auto for_each_target = [&](auto&& visit) {
    if (service.kind == ServiceInfo::Kind::kClusterIP) {
      if (!service.cluster_ips.empty()) visit(std::string_view(), set ? set->port : uint16_t{0});
    } else if (set != nullptr) {
      for (const auto& target : set->targets) {
        visit(std::string_view(records.hosts()[target.host].label), target.port);
      }
    } else {
      std::string_view last;
      for (const auto& host : records.hosts()) {
        if (!filter.Keeps(host)) continue;
        if (host.label != last) visit(std::string_view(host.label), uint16_t{0});
        last = host.label;
      }
    }
  };
  size_t count = 0;
  for_each_target([&](std::string_view, uint16_t) { ++count; });
  if (count == 0) return;

  const uint16_t weight = static_cast<uint16_t>(100 / count);
  auto target_name = [&](std::string_view label) {
    if (label.empty()) return *service_name;
    auto full = dns::Name::FromLabels({label}, *service_name);
    return full ? *full : *service_name;
  };
  response.AnswerRrset([&] {
    for_each_target([&](std::string_view label, uint16_t port) {
      response.builder.Add(owner, RrType::kSrv, RrClass::kIn, config_.ttl_s,
                           dns::RdataSrv{10, weight, port, target_name(label)});
    });
  });
  if (response.builder.truncated()) return;

  // The targets' addresses in the additional section (each set omitted if it does not fit).
  auto add_addresses = [&](const dns::Name& glue, auto&& items, auto&& ip_of, auto&& keeps) {
    for (IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
      response.builder.BeginRrset(Section::kAdditional);
      for (const auto& item : items) {
        const IpAddress& ip = ip_of(item);
        if (ip.family() == family && keeps(item)) {
          response.builder.Add(glue, AddressType(ip), RrClass::kIn, config_.ttl_s,
                               AddressRdata(ip));
        }
      }
      (void)response.builder.EndRrset();
    }
  };
  for_each_target([&](std::string_view label, uint16_t) {
    if (label.empty()) {
      add_addresses(
          *service_name, service.cluster_ips, [](const IpAddress& ip) { return ip; },
          [](const IpAddress&) { return true; });
    } else {
      add_addresses(
          target_name(label), records.FindHost(label),
          [](const ServiceRecords::Host& host) { return host.ip; },
          [&](const ServiceRecords::Host& host) { return filter.Keeps(host); });
    }
  });
}

void Answerer::AnswerZonal(const Snapshot& snapshot, const dns::Name& lower, size_t depth,
                           Response& response) const {
  // CoreDNS parses <zone>.<directive>._zone.svc.ns.svc.Z this way (plugin/kubernetes
  // parse.go): an unknown directive keeps the NXDOMAIN of a name too long to exist.
  const std::string_view directive = lower.label(depth - 5);
  if (directive == "pin") {
    response.zonal_directive = ZonalDirective::kPin;
  } else if (directive == "prefer") {
    response.zonal_directive = ZonalDirective::kPrefer;
  } else {
    response.rcode = dns::Rcode::kNxDomain;
    return;
  }
  const std::string_view ns = lower.label(depth - 2);
  const std::string_view name = lower.label(depth - 3);
  const ServiceRecords* records = snapshot.FindService(ns, name);
  // Defined for headless services only: a cluster IP has no zone (CoreDNS answers NXDOMAIN).
  if (records == nullptr || !records->answerable() || !records->headless()) {
    response.zonal_outcome = ZonalOutcome::kNxDomain;
    response.rcode = dns::Rcode::kNxDomain;
    return;
  }
  // The zone is every label left of the directive, joined by dots, as CoreDNS joins them. A
  // label holding a dot itself matches nothing: CoreDNS compares its escaped form (a\.b),
  // which no zone (a label value: alphanumerics, '-', '_', '.') spells.
  std::array<char, dns::Name::kMaxWireLength> text;
  size_t size = 0;
  bool matchable = true;
  for (size_t i = 0; i + 5 < depth; ++i) {
    std::string_view part = lower.label(i);
    if (part.find('.') != std::string_view::npos) matchable = false;
    if (i > 0) text[size++] = '.';
    std::copy(part.begin(), part.end(), text.begin() + static_cast<ptrdiff_t>(size));
    size += part.size();
  }
  // zones() holds the zones of the service's hosts only: a zone found has some.
  const uint16_t zone = matchable ? records->FindZone(std::string_view(text.data(), size))
                                  : ServiceRecords::Host::kNoZone;
  HostFilter filter;
  if (zone != ServiceRecords::Host::kNoZone) {
    filter.zone = zone;
    response.zonal_outcome = ZonalOutcome::kZone;
  } else if (response.zonal_directive == ZonalDirective::kPrefer && !records->hosts().empty()) {
    response.zonal_outcome = ZonalOutcome::kFallback;  // the fallback the name asked for
  } else {
    response.zonal_outcome = ZonalOutcome::kEmpty;  // the name exists: NODATA, not NXDOMAIN
    return;
  }
  const RrType qtype = response.query.qtype;
  if (qtype == RrType::kSrv) {
    AnswerSrv(*records, nullptr, ns, name, response, filter);
  } else {
    // NODATA unless A, AAAA or ANY.
    AnswerHosts(records->hosts(), response.query.qname, response, filter);
  }
}

std::optional<IpAddress> Answerer::PodAddress(const Snapshot& snapshot, std::string_view ns,
                                              std::string_view dashed) const {
  auto ip = ParseDashed(dashed);
  if (ip && config_.pod_records == PodRecords::kVerified && !snapshot.HasPodIp(ns, *ip)) {
    return std::nullopt;
  }
  return ip;
}

void Answerer::AnswerPod(const Snapshot& snapshot, std::string_view ns, std::string_view dashed,
                         const dns::Name& owner, Response& response) const {
  auto ip = PodAddress(snapshot, ns, dashed);
  if (!ip) {
    response.rcode = dns::Rcode::kNxDomain;
    return;
  }
  if (!WantsAddress(response.query.qtype, ip->family())) return;  // NODATA
  response.AnswerRrset([&] {
    response.builder.Add(owner, AddressType(*ip), RrClass::kIn, config_.ttl_s, AddressRdata(*ip));
  });
}

bool Answerer::AnswerReverse(const Snapshot& snapshot, const dns::Name& lower,
                             Response& response) const {
  auto ip = dns::AddressFromReverseName(lower);
  if (!ip) return false;
  if (snapshot.ForEachPtr(*ip, [](std::string_view) {}) == 0) return false;
  response.builder.header().aa = true;
  const RrType qtype = response.query.qtype;
  if (qtype != RrType::kPtr && qtype != RrType::kAny) return true;  // NODATA
  auto svc_zone = dns::Name::FromLabels({"svc"}, config_.zone);
  response.AnswerRrset([&] {
    snapshot.ForEachPtr(*ip, [&](std::string_view relative_text) {
      auto relative = dns::Name::FromText(relative_text);
      if (relative) {
        if (auto target = dns::Name::Concat(*relative, *svc_zone)) {
          response.builder.Add(response.query.qname, RrType::kPtr, RrClass::kIn, config_.ttl_s,
                               dns::RdataPtr{*target});
        }
      }
    });
  });
  return true;
}

void Answerer::Chase(const Snapshot& snapshot, const dns::Name& target, Response& response,
                     int depth) const {
  if (depth > kMaxChaseDepth) return;  // a CNAME loop between ExternalName services
  const size_t labels = target.label_count() - config_.zone.label_count();
  if (labels == 3 && target.label(2) == "svc") {
    std::string_view ns = target.label(1);
    std::string_view name = target.label(0);
    const ServiceRecords* records = snapshot.FindService(ns, name);
    if (records != nullptr && records->answerable()) {
      AnswerService(snapshot, *records, target, ns, name, response, depth);
      return;
    }
  } else if (labels == 4 && target.label(3) == "svc") {
    const ServiceRecords* records = snapshot.FindService(target.label(2), target.label(1));
    if (records != nullptr && records->answerable() && records->headless()) {
      auto hosts = records->FindHost(target.label(0));
      if (!hosts.empty()) {
        AnswerHosts(hosts, target, response);
        return;
      }
    }
  } else if (labels == 3 && target.label(2) == "pod" &&
             config_.pod_records != PodRecords::kDisabled) {
    AnswerPod(snapshot, target.label(1), target.label(0), target, response);
    return;
  }
  // The CNAME's target does not exist: NXDOMAIN describes the last name (RFC 6604).
  response.rcode = dns::Rcode::kNxDomain;
}

}  // namespace kdns::kubedns

#include "kubedns/answering/autopath.h"

#include <algorithm>
#include <variant>

#include "common/dns/edns.h"
#include "common/dns/rdata.h"
#include "kubedns/answering/chase.h"

namespace kdns::kubedns {

bool IsNamespaceLabel(std::string_view label) {
  if (label.empty() || label.size() > dns::Name::kMaxLabelLength) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(label.front()) || !alnum(label.back())) return false;
  return std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; });
}

Autopath::Autopath(const dns::Name& zone, const std::vector<dns::Name>& search)
    : zone_(zone.Lowercased()) {
  suffixes_.push_back(*dns::Name::FromLabels({"svc"}, zone_));
  suffixes_.push_back(zone_);
  for (const dns::Name& domain : search) {
    dns::Name lower = domain.Lowercased();
    if (lower.IsRoot() || lower.IsSubdomainOf(zone_)) continue;
    if (std::find(suffixes_.begin(), suffixes_.end(), lower) != suffixes_.end()) continue;
    suffixes_.push_back(lower);
  }
  suffixes_.push_back(dns::Name::Root());
}

std::optional<dns::Name> Autopath::Prefix(const dns::Name& qname) const {
  const dns::Name lower = qname.Lowercased();
  if (!lower.IsSubdomainOf(zone_)) return std::nullopt;
  const size_t depth = lower.label_count() - zone_.label_count();
  // N (at least one label), the namespace, svc.
  if (depth < 3 || lower.label(depth - 1) != "svc" || !IsNamespaceLabel(lower.label(depth - 2))) {
    return std::nullopt;
  }
  dns::Name prefix;
  for (size_t i = 0; i < depth - 2; ++i) {
    if (!prefix.AppendLabel(lower.label(i))) return std::nullopt;  // cannot be: shorter
  }
  return prefix;
}

namespace {

// How long a record may be kept: an SOA in a negative answer for min(TTL, MINIMUM).
uint32_t Lifetime(const dns::ResourceRecord& record) {
  if (const auto* soa = std::get_if<dns::RdataSoa>(&record.rdata)) {
    return std::min(record.ttl_s, soa->minimum_s);
  }
  return record.ttl_s;
}

}  // namespace

dns::Message ComposeAutopathAnswer(const dns::Query& query, const dns::Name& candidate,
                                   const dns::Message& reply, AutopathSource source,
                                   uint32_t max_ttl_s) {
  dns::Message answer;
  answer.header.id = query.header.id;
  answer.header.qr = true;
  answer.header.opcode = query.header.opcode;
  answer.header.rd = query.header.rd;
  answer.header.cd = query.header.cd;
  answer.header.ra = true;
  answer.header.aa = source == AutopathSource::kOurs;
  answer.header.rcode = dns::Rcode::kNoError;
  answer.questions.push_back({query.qname, query.qtype, query.qclass});

  // Only the candidate's chain enters the answer (chase.h, FollowChain): an upstream's records
  // for other owners are not ours to pass on, nor its additionals.
  const Chain chain = FollowChain(reply.answers, candidate, query.qtype);
  std::vector<dns::ResourceRecord> soas;
  for (const auto& record : reply.authorities) {
    if (record.type == dns::RrType::kSoa && chain.end.IsSubdomainOf(record.owner)) {
      soas.push_back(record);
    }
  }
  // A positive answer's SOA (if an upstream sent one) says nothing about it.
  const bool nodata = !chain.answered;
  uint32_t ttl_s = max_ttl_s;
  for (const auto& record : chain.records) ttl_s = std::min(ttl_s, Lifetime(record));
  if (nodata) {
    for (const auto& record : soas) ttl_s = std::min(ttl_s, Lifetime(record));
  }

  answer.answers.reserve(chain.records.size() + 1);
  answer.answers.push_back(
      {query.qname, dns::RrType::kCname, dns::RrClass::kIn, ttl_s, dns::RdataCname{candidate}});
  for (const auto& record : chain.records) {
    answer.answers.push_back(record);
    answer.answers.back().ttl_s = std::min(record.ttl_s, ttl_s);
  }
  if (nodata) {
    for (auto& record : soas) {
      record.ttl_s = std::min(record.ttl_s, ttl_s);
      answer.authorities.push_back(std::move(record));
    }
  }
  if (source == AutopathSource::kOurs) {
    for (const auto& record : reply.additionals) {
      answer.additionals.push_back(record);
      answer.additionals.back().ttl_s = std::min(record.ttl_s, ttl_s);
    }
  }
  if (query.edns) {
    answer.edns.emplace();
    answer.edns->dnssec_ok = query.edns->dnssec_ok;
  }
  return answer;
}

}  // namespace kdns::kubedns

#include "kubedns/answering/chase.h"

#include <algorithm>
#include <variant>

#include "common/dns/builder.h"
#include "common/dns/edns.h"
#include "common/upstream/wire.h"

namespace kdns::kubedns {
namespace {

const dns::ResourceRecord* FindRecord(const std::vector<dns::ResourceRecord>& records,
                                      const dns::Name& owner, dns::RrType type) {
  for (const auto& record : records) {
    if (record.type == type && record.owner == owner) return &record;
  }
  return nullptr;
}

}  // namespace

ChaseStep AppendChase(const dns::Message& reply, const dns::Name& target, dns::RrType qtype,
                      dns::Message* partial, dns::Name* next) {
  const dns::Rcode rcode = reply.rcode();
  if (rcode != dns::Rcode::kNoError && rcode != dns::Rcode::kNxDomain) return ChaseStep::kFailed;
  // Follow the reply's own CNAMEs from the target to the records asked for.
  dns::Name name = target;
  bool found = false;
  for (size_t hops = 0; hops <= reply.answers.size(); ++hops) {
    if (FindRecord(reply.answers, name, qtype) != nullptr) {
      found = true;
      break;
    }
    const dns::ResourceRecord* cname = FindRecord(reply.answers, name, dns::RrType::kCname);
    const auto* rdata = cname != nullptr ? std::get_if<dns::RdataCname>(&cname->rdata) : nullptr;
    if (rdata == nullptr) break;
    name = rdata->target;
  }
  for (const auto& record : reply.answers) {
    if (std::find(partial->answers.begin(), partial->answers.end(), record) ==
        partial->answers.end()) {
      partial->answers.push_back(record);
    }
  }
  const bool has_soa = std::any_of(reply.authorities.begin(), reply.authorities.end(),
                                   [](const auto& r) { return r.type == dns::RrType::kSoa; });
  if (!found && rcode == dns::Rcode::kNoError && !(name == target) && !has_soa) {
    // An authoritative server gave a CNAME out of its zone and stopped there.
    *next = name;
    return ChaseStep::kFollow;
  }
  partial->header.rcode = rcode;
  if (partial->edns) partial->edns->extended_rcode = 0;
  if (!found || rcode == dns::Rcode::kNxDomain) {
    for (const auto& record : reply.authorities) {
      if (record.type == dns::RrType::kSoa) partial->authorities.push_back(record);
    }
  }
  return ChaseStep::kDone;
}

size_t CountCnames(const dns::Message& message) {
  return static_cast<size_t>(
      std::count_if(message.answers.begin(), message.answers.end(),
                    [](const auto& r) { return r.type == dns::RrType::kCname; }));
}

}  // namespace kdns::kubedns

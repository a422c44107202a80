#include "kubedns/answering/chase.h"

#include <algorithm>
#include <variant>

#include "common/dns/builder.h"
#include "common/dns/edns.h"
#include "common/upstream/wire.h"

namespace kdns::kubedns {
namespace {

// Whether `record` belongs at `name` for `qtype`: the records asked for, or their signatures.
bool Asked(const dns::ResourceRecord& record, const dns::Name& name, dns::RrType qtype) {
  if (!(record.owner == name)) return false;
  return qtype == dns::RrType::kAny || record.type == qtype || record.type == dns::RrType::kRrsig;
}

// The first CNAME owned by `name`; a second one at the same name is not part of any chain.
const dns::ResourceRecord* CnameAt(const std::vector<dns::ResourceRecord>& records,
                                   const dns::Name& name) {
  for (const auto& record : records) {
    if (record.type == dns::RrType::kCname && record.owner == name) return &record;
  }
  return nullptr;
}

bool Contains(const std::vector<dns::ResourceRecord>& records, const dns::ResourceRecord& record) {
  return std::find(records.begin(), records.end(), record) != records.end();
}

}  // namespace

Chain FollowChain(const std::vector<dns::ResourceRecord>& answers, const dns::Name& start,
                  dns::RrType qtype) {
  Chain chain;
  chain.end = start;
  std::vector<dns::Name> visited;
  while (true) {
    visited.push_back(chain.end);
    for (const auto& record : answers) {
      if (Asked(record, chain.end, qtype) && record.type != dns::RrType::kRrsig) {
        chain.answered = true;
      }
    }
    if (chain.answered) {
      for (const auto& record : answers) {
        if (Asked(record, chain.end, qtype)) chain.records.push_back(record);
      }
      return chain;
    }
    const dns::ResourceRecord* cname = CnameAt(answers, chain.end);
    const auto* rdata = cname != nullptr ? std::get_if<dns::RdataCname>(&cname->rdata) : nullptr;
    if (rdata == nullptr) return chain;
    chain.records.push_back(*cname);
    for (const auto& record : answers) {
      if (record.type == dns::RrType::kRrsig && record.owner == chain.end) {
        chain.records.push_back(record);
      }
    }
    if (std::find(visited.begin(), visited.end(), rdata->target) != visited.end()) {
      chain.loop = true;
      return chain;
    }
    chain.end = rdata->target;
  }
}

ChaseStep AppendChase(const dns::Message& reply, const dns::Name& target, dns::RrType qtype,
                      dns::Message* partial, dns::Name* next) {
  const dns::Rcode rcode = reply.rcode();
  if (rcode != dns::Rcode::kNoError && rcode != dns::Rcode::kNxDomain) return ChaseStep::kFailed;
  const Chain chain = FollowChain(reply.answers, target, qtype);
  if (chain.loop) return ChaseStep::kFailed;
  for (const auto& record : chain.records) {
    if (!Contains(partial->answers, record)) partial->answers.push_back(record);
  }
  // An SOA says something about the chain's last name only when it owns it or an ancestor.
  std::vector<dns::ResourceRecord> soas;
  for (const auto& record : reply.authorities) {
    if (record.type == dns::RrType::kSoa && chain.end.IsSubdomainOf(record.owner)) {
      soas.push_back(record);
    }
  }
  if (!chain.answered && rcode == dns::Rcode::kNoError && !(chain.end == target) && soas.empty()) {
    // An authoritative server gave a CNAME out of its zone and stopped there.
    *next = chain.end;
    return ChaseStep::kFollow;
  }
  partial->header.rcode = rcode;
  if (partial->edns) partial->edns->extended_rcode = 0;
  if (!chain.answered || rcode == dns::Rcode::kNxDomain) {
    for (auto& record : soas) partial->authorities.push_back(std::move(record));
  }
  return ChaseStep::kDone;
}

size_t CountCnames(const dns::Message& message) {
  return static_cast<size_t>(
      std::count_if(message.answers.begin(), message.answers.end(),
                    [](const auto& r) { return r.type == dns::RrType::kCname; }));
}

}  // namespace kdns::kubedns

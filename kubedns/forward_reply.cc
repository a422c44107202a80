#include "kubedns/forward_reply.h"

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

ClientQuery ClientQuery::From(const server::Admission& admission) {
  const dns::Query& query = admission.query;
  ClientQuery client;
  client.id = query.header.id;
  client.qname = query.qname;
  client.qtype = query.qtype;
  client.qclass = query.qclass;
  client.rd = query.header.rd;
  client.cd = query.header.cd;
  client.edns = query.edns.has_value();
  client.dnssec_ok = query.edns && query.edns->dnssec_ok;
  client.transport = admission.transport;
  client.limit_bytes = admission.reply_limit_bytes;
  return client;
}

bool ClientReply(const upstream::Result& result, const ClientQuery& client,
                 std::vector<uint8_t>* out) {
  const dns::Message& upstream_reply = result.message;
  if (upstream_reply.edns.has_value() == client.edns && result.reply.size() <= client.limit_bytes) {
    // The common case: the bytes as received, with the client's ID and question case.
    out->assign(result.reply.begin(), result.reply.end());
    return upstream::RewriteForClient(*out, client.id, client.qname);
  }
  // Too big for the client, or EDNS to add or remove: re-encode.
  dns::Message reply = upstream_reply;
  reply.header.id = client.id;
  if (!reply.questions.empty()) {
    const dns::Name shared = reply.questions.front().name;  // a coalesced query's spelling
    reply.questions.front().name = client.qname;
    for (auto* section : {&reply.answers, &reply.authorities, &reply.additionals}) {
      for (auto& record : *section) {
        if (record.owner.IdenticalTo(shared)) record.owner = client.qname;
      }
    }
  }
  dns::Rcode rcode = upstream_reply.rcode();
  if (client.edns) {
    dns::Edns edns;  // ours: 1232, no options
    edns.dnssec_ok = upstream_reply.edns && upstream_reply.edns->dnssec_ok;
    edns.extended_rcode = static_cast<uint8_t>(static_cast<uint16_t>(rcode) >> 4);
    reply.edns = edns;
  } else {
    reply.edns.reset();
    if (static_cast<uint16_t>(rcode) > 15) rcode = dns::Rcode::kServFail;  // needs EDNS
  }
  reply.header.rcode = rcode;
  return dns::BuildMessage(reply, client.limit_bytes, out) == dns::BuildError::kOk;
}

std::span<const uint8_t> ErrorReply(const ClientQuery& client, dns::Rcode rcode,
                                    std::span<uint8_t> buffer) {
  dns::MessageBuilder builder(buffer, client.limit_bytes);
  dns::Header& header = builder.header();
  header.id = client.id;
  header.qr = true;
  header.opcode = dns::Opcode::kQuery;
  header.rd = client.rd;
  header.cd = client.cd;
  header.ra = true;
  header.rcode = rcode;
  (void)builder.AddQuestion(client.qname, client.qtype, client.qclass);
  if (client.edns) (void)builder.SetEdns(dns::EdnsView{});
  return builder.Finish();
}

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

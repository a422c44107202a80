#include "common/server/forward_reply.h"

#include "common/dns/builder.h"
#include "common/dns/edns.h"
#include "common/upstream/wire.h"

namespace kdns::server {

ClientQuery ClientQuery::From(const Admission& admission) {
  ClientQuery client;
  client.query = Detach(admission.query);
  client.transport = admission.transport;
  client.limit_bytes = admission.reply_limit_bytes;
  return client;
}

bool ClientReply(const upstream::Result& result, const ClientQuery& client,
                 std::vector<uint8_t>* out) {
  const dns::Message& upstream_reply = result.message;
  if (upstream_reply.edns.has_value() == client.query.edns.has_value() &&
      result.reply.size() <= client.limit_bytes) {
    // The common case: the bytes as received, with the client's ID and question case.
    out->assign(result.reply.begin(), result.reply.end());
    return upstream::RewriteForClient(*out, client.query.header.id, client.query.qname);
  }
  // Too big for the client, or EDNS to add or remove: re-encode.
  dns::Message reply = upstream_reply;
  reply.header.id = client.query.header.id;
  if (!reply.questions.empty()) {
    const dns::Name shared = reply.questions.front().name;  // a coalesced query's spelling
    reply.questions.front().name = client.query.qname;
    for (auto* section : {&reply.answers, &reply.authorities, &reply.additionals}) {
      for (auto& record : *section) {
        if (record.owner.IdenticalTo(shared)) record.owner = client.query.qname;
      }
    }
  }
  dns::Rcode rcode = upstream_reply.rcode();
  if (client.query.edns.has_value()) {
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

}  // namespace kdns::server

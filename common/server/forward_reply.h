// Fitting an upstream's reply to the client that asked, for a server that forwards.
//
//   - ClientQuery is what a server keeps of a client's query while an upstream answers it:
//     the admitted query (detached from its packet), its transport and its reply limit
//     (admission.h), so the answer, or the SERVFAIL (WriteEmptyResponse), is written for
//     that client.
//   - ClientReply turns an upstream's reply (shared by coalesced waiters) into one client's
//     answer: the client's ID and question case (upstream::RewriteForClient), fitted to the
//     client's reply limit; a reply that does not fit is re-encoded and cut at a whole RRset
//     with TC set (RFC 2181 §9), so the client retries over TCP. OPT only when the client
//     sent one (RFC 6891 §7): the upstream's OPT belongs to our exchange with it, so a reply
//     whose EDNS does not match the client's is re-encoded with ours.
//
// kubedns answers forwarded names with ClientReply. frontend-cache keeps ClientQuery too
// but writes replies through its cache's stored form (frontend-cache/cached_response.h:
// TTLs capped by its flags, and TC with no records, as dnsmasq does, when a reply does not
// fit): the two differ on the wire on purpose, each as the server it replaces.
//
// Pure functions on values; no thread affinity.
#pragma once

#include <cstddef>
#include <vector>

#include "common/dns/parser.h"
#include "common/dns/transport.h"
#include "common/server/admission.h"
#include "common/upstream/forwarder.h"

namespace kdns::server {

// What is kept of a client's query while its answer comes from an upstream.
struct ClientQuery {
  dns::Query query;  // as admitted, detached (no EDNS options)
  dns::Transport transport = dns::Transport::kUdp;
  size_t limit_bytes = 512;  // the largest answer it may get

  static ClientQuery From(const Admission& admission);
};

// Writes the client's answer from a kAnswer `result` into *out. False (answer SERVFAIL) when
// the reply cannot be re-encoded.
[[nodiscard]] bool ClientReply(const upstream::Result& result, const ClientQuery& client,
                               std::vector<uint8_t>* out);

}  // namespace kdns::server

// The upstream client's wire logic, with no I/O: the query it sends, whether a reply
// belongs to that query, and the rewrite that turns a shared upstream reply into one
// client's answer.
//
// Matching (compare dnsdist's responseContentMatches): a reply is ours only if it comes
// from the address and port we sent to (checked by the caller, which owns the socket), has
// QR set, our 16-bit ID and a question equal to ours (name case-insensitively, type and
// class; with 0x20, dns0x20.h, the name byte for byte as sent). Everything else is dropped
// and counted, and the query keeps waiting: an off-path attacker must guess port and ID and
// question (and its case), an honest but confused server cannot
// poison us with an answer to another query. One exception, as in dnsdist: a reply with no
// question section is accepted when its rcode is FORMERR, SERVFAIL, NOTIMP or REFUSED,
// because servers that cannot parse a query often drop the question; such a reply is
// never handed to a client as an answer, it only moves the query on (EDNS fallback or
// failover). Matching IDs are checked before anything is parsed, so spoofed floods cost
// little.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/dns/client_address.h"
#include "common/dns/edns.h"
#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/transport.h"
#include "common/dns/types.h"
#include "common/loop/socket_address.h"

namespace kdns::upstream {

enum class EdnsMode : uint8_t { kWithEdns, kWithoutEdns };

// What a client asked, as far as forwarding is concerned.
struct Request {
  dns::Name qname;  // as the client asked: sent upstream with the same case
  dns::RrType qtype = dns::RrType::kA;
  dns::RrClass qclass = dns::RrClass::kIn;
  bool dnssec_ok = false;          // the client's EDNS DO bit (RFC 3225)
  bool checking_disabled = false;  // the client's CD bit (RFC 4035 §3.2.2)
  dns::Transport client_transport = dns::Transport::kUdp;
  // Who asked (server::Request::client: the pod, also behind a trusted forwarder), for the
  // client's fair share of the forwarding budgets (forward_budgets.h) and, to a server
  // trusted with it (Forwarder::Options::client_address_to), in the client-address option;
  // coalesced queries carry the first asker's. Unspecified for our own queries
  // (prefetches, probes): no share to keep, nothing to carry.
  loop::SocketAddress client;

  static Request FromQuery(const dns::Query& query, dns::Transport client_transport,
                           const loop::SocketAddress& client);
};

// Writes the upstream query: our ID, RD set, CD copied, the question as asked (or spelt as
// `qname_0x20`, when given: the same name in random case) and, with kWithEdns, an OPT record
// advertising `udp_payload_bytes` with the client's DO bit and, with `client_address_option`
// and a Request::client (IPv4 or IPv6), that client in the client-address option of that
// code (dns/client_address.h; only for a server trusted with it). Nothing else of the
// client's EDNS is passed on. False only if the question does not fit (it always does for a
// parsed name).
[[nodiscard]] bool BuildQuery(const Request& request, uint16_t id, EdnsMode edns,
                              uint16_t udp_payload_bytes, std::vector<uint8_t>* out,
                              const dns::Name* qname_0x20 = nullptr,
                              std::optional<uint16_t> client_address_option = std::nullopt);

enum class Match : uint8_t {
  kOk,
  kMalformed,      // not a DNS message (fails to parse)
  kNotResponse,    // QR clear or an opcode other than QUERY
  kWrongId,        // another query's ID: spoofed, or a late reply to an earlier try
  kWrongQuestion,  // our ID but another question, or no question with a NOERROR/NXDOMAIN
  kWrongCase,      // our ID and question, but the name not spelt as sent (0x20, dns0x20.h)
};
const char* MatchName(Match match);

// How much of a matching reply MatchReply decodes into its dns::Message.
enum class ReplyDecode : uint8_t {
  // Every record (kubedns chases CNAMEs and re-encodes answers from them).
  kWhole,
  // The header, the question and EDNS; the records are walked structurally (names, lengths,
  // one OPT in the additional section, as dns::ParseQuery does) and left in the bytes
  // (frontend-cache caches and serves the bytes). A decoded record takes about 800 bytes
  // (an inline name and rdata), so a 7.7 KiB reply of 480 A records would take 390 KiB
  // decoded; this takes nothing per record and allocates nothing once `parsed` has room for
  // one question.
  kQuestion,
};

// Checks `reply` against the query sent with `id` for `request`; fills *parsed on kOk (as
// `decode` says), and *reply_end (when given) with the size of the message without the
// bytes some servers leave after its last record (tolerated, never passed on). With
// `qname_0x20` (the name as sent in random case), the question must spell it byte for byte:
// the same name in another case is kWrongCase.
[[nodiscard]] Match MatchReply(std::span<const uint8_t> reply, uint16_t id, const Request& request,
                               dns::Message* parsed, size_t* reply_end = nullptr,
                               ReplyDecode decode = ReplyDecode::kWhole,
                               const dns::Name* qname_0x20 = nullptr);

// Turns a reply into the answer for one client: writes the client's ID and, when the
// reply's first question is written uncompressed with the same labels, the client's
// spelling of the name (answers echo the question's case). False if `reply` is shorter
// than a header; the ID is written whenever it returns true.
bool RewriteForClient(std::span<uint8_t> reply, uint16_t client_id, const dns::Name& client_qname);

}  // namespace kdns::upstream

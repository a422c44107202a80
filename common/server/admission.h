// Admission: the one step every DNS query goes through before a handler sees it, for both
// servers and for frontend-cache's receiver-thread fast path alike. It parses the query
// once and decides, in this order:
//
//   kDrop     shorter than a header, or QR set: not a query. Never answered, so two servers
//             cannot bounce responses between them and we reflect nothing.
//   kFormErr  a header, but the rest does not parse (RFC 1035 §4.1.1): FORMERR with the ID
//             echoed and no question (we could not read one).
//   kBadVers  EDNS version other than 0 (RFC 6891 §6.1.3).
//   kNotImp   an opcode other than QUERY.
//   kFormErr  also a QUERY that carries what a query must not (QueryShape): records in the
//             answer or authority section, an additional record other than its one OPT
//             (RFC 6891 §6.1.1; we hold no TSIG keys), or bytes after its last record.
//             Unbound and NSD answer such records FORMERR too (dnsmasq REFUSED); Knot's
//             parser rejects trailing bytes as malformed (KNOT_ETRAIL), where BIND only
//             logs them and Unbound, NSD and dnsmasq ignore them: we refuse them, so a
//             query is never bigger than what it asks. Nothing of such a packet is kept
//             or forwarded.
//   kRefused  only with ClassScope::kInternetOnly (kubedns, an authoritative server): a
//             class other than IN and ANY, or a zone transfer (AXFR, IXFR).
//   kAdmitted everything else: the handler answers it from Admission::query.
//
// It also fixes the largest reply the client takes (reply_limit_bytes): the whole DNS
// message over TCP; over UDP 512 without EDNS, else the client's EDNS payload size (at
// least 512, RFC 6891 §6.2.5) capped at 1232 so answers are not fragmented (DNS flag day
// 2020, and what both servers advertise).
//
// Who the query is for (Admission::client, ResolveClient): the peer, or, when the peer is
// a trusted forwarder (ClientAddressPolicy: frontend-cache on loopback in front of
// kubedns), the client its client-address option names (common/dns/client_address.h).
// Every per-client mechanism uses that address (rate limit, shedding, the waiting
// reserve, RRL, the query log, /debug/top-clients, forward budgets' fair shares); replies
// still go to the peer. From a peer not trusted the option is ignored (kUntrusted), and so
// is a malformed one from a trusted peer (kMalformed): the query is the peer's, answered as
// usual, the caller counts it. Not FORMERR: our forwarder would retry without EDNS and
// lose the option anyway, and bad input loses nothing here.
//
// WriteRefusal writes the reply to a query not admitted; WriteEmptyResponse the record-less
// answers both servers build for their own reasons (SERVFAIL, NXDOMAIN, REFUSED).
// Program-specific decisions (frontend-cache: CHAOS, loop probes, routing; kubedns: which
// names it owns) are the handler's, after admission.
//
// Pure functions on values, nothing allocated; safe on any thread (the receiver thread
// admits its datagrams too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_prefix.h"
#include "common/dns/client_address.h"
#include "common/dns/edns.h"
#include "common/dns/parser.h"
#include "common/dns/transport.h"
#include "common/dns/types.h"
#include "common/loop/socket_address.h"

namespace kdns::server {

// Largest UDP reply, whatever larger size a client offers.
inline constexpr size_t kMaxUdpReplyBytes = dns::kDefaultUdpPayloadSize;

// Which classes and types a server serves at all.
enum class ClassScope : uint8_t {
  kAny,           // every class and type goes to the handler (a forwarder: frontend-cache)
  kInternetOnly,  // REFUSED for classes but IN and ANY and for AXFR/IXFR (kubedns)
};

struct AdmissionPolicy {
  ClassScope classes = ClassScope::kAny;
};

// Whom a server believes about the client behind a query (see the header comment).
struct ClientAddressPolicy {
  uint16_t option_code = dns::kDefaultClientAddressOption;
  // Peers whose client-address option is believed; empty: the option is not looked at.
  std::vector<IpPrefix> trusted;

  bool Trusts(const loop::SocketAddress& peer) const;
};

// The default peers of the client address: loopback, which in the kube-dns pod is
// frontend-cache for kubedns (--client-address-from) and kubedns for frontend-cache
// (--client-address-to).
inline constexpr std::string_view kDefaultClientAddressPeers = "127.0.0.0/8,::1/128";
std::vector<IpPrefix> DefaultClientAddressPeers();

// --client-address-option's value: a private-use EDNS option code (65001-65534). False
// with a one-line *error.
bool ParseClientAddressOption(int64_t value, uint16_t* code, std::string* error);

// Where Admission::client came from.
enum class ClientSource : uint8_t {
  kPeer,       // the peer: no option, or the policy trusts no one
  kOption,     // a trusted peer's client-address option
  kUntrusted,  // the peer: its option was ignored, the peer is not trusted
  kMalformed,  // the peer: a trusted peer's option was malformed, ignored
};

enum class Verdict : uint8_t { kAdmitted, kDrop, kFormErr, kBadVers, kNotImp, kRefused };

// What a parsed QUERY carries beyond its question and OPT, if anything (kFormErr).
enum class QueryShape : uint8_t {
  kOk,
  kAnswerOrAuthority,  // records in the answer or authority section
  kExtraAdditional,    // an additional record other than the one OPT
  kTrailingBytes,      // bytes after the last record
};

// The shape of `query`, parsed from `packet_size` bytes (see the header comment).
QueryShape ShapeOf(const dns::Query& query, size_t packet_size);

struct Admission {
  Verdict verdict = Verdict::kDrop;
  // The parsed query: whole for kAdmitted, kBadVers, kNotImp and kRefused; the header only
  // for kFormErr (and kDrop with a header). EDNS options point into the packet.
  dns::Query query;
  dns::Transport transport = dns::Transport::kUdp;
  size_t reply_limit_bytes = 512;      // the largest reply the client takes
  QueryShape shape = QueryShape::kOk;  // why a parsed QUERY is kFormErr, if it is
  // Whom the query is for (ResolveClient): every per-client mechanism's address.
  loop::SocketAddress client;
  ClientSource client_source = ClientSource::kPeer;

  bool admitted() const { return verdict == Verdict::kAdmitted; }
};

// The largest reply a client of `transport` that sent `query` takes (see the header comment).
size_t ReplyLimit(const dns::Query& query, dns::Transport transport);

// Parses and admits `packet` into *admission (overwritten whole).
void Admit(std::span<const uint8_t> packet, dns::Transport transport, const AdmissionPolicy& policy,
           Admission* admission);

// Sets admission->client (and client_source) for a query parsed by Admit from `peer`
// (see the header comment).
void ResolveClient(const loop::SocketAddress& peer, const ClientAddressPolicy& policy,
                   Admission* admission);

// The rcode a query not admitted is answered with (kNoError for kAdmitted and kDrop).
dns::Rcode RefusalRcode(Verdict verdict);

// A copy of an admitted query that outlives its packet, for a handler that answers later:
// the EDNS options are dropped (no answer echoes them; they point into the packet).
dns::Query Detach(const dns::Query& query);

// The reply to a query not admitted: FORMERR, or BADVERS/NOTIMP/REFUSED as
// WriteEmptyResponse writes them. Empty for kAdmitted and kDrop (nothing to send).
std::span<const uint8_t> WriteRefusal(const Admission& admission, std::span<uint8_t> out);

// A response with no records: the question echoed, `rcode`, RA (both servers resolve), AA
// as given, and an OPT record advertising 1232 when the query had one (RFC 6891 §7). Empty
// only when `out` is too small.
std::span<const uint8_t> WriteEmptyResponse(const dns::Query& query, dns::Rcode rcode, bool aa,
                                            std::span<uint8_t> out);

}  // namespace kdns::server

// Fitting a reply to the client that asked, one implementation for both servers.
//
//   - ClientQuery is what a server keeps of a client's query while an upstream answers it:
//     only what the reply needs (ID, RD and CD, the question as spelt, whether it had EDNS
//     and its DO bit, the transport and the reply limit, admission.h), never the packet or
//     its EDNS options, so a waiting query costs the same whatever the client sent
//     (waiting_queries.h keeps it with the Responder). query() gives it back as the
//     dns::Query the answer, or the SERVFAIL (WriteEmptyResponse), is written from.
//   - FitReply writes one client's answer from a reply (an upstream's, shared by coalesced
//     waiters, or a cache's stored form): the client's ID and question case
//     (upstream::RewriteForClient), the OPT record toward the client (RFC 6891 §7: a reply's
//     OPT belongs to our exchange with the upstream; the client gets one only when it sent
//     one), and the client's reply limit. What happens when the reply does not fit is the
//     server's choice, Truncation:
//       kWholeRRsets  kubedns, as kube-dns: re-encoded and cut after the last whole RRset
//                     that fits, TC set (RFC 2181 §9);
//       kEmpty        frontend-cache, as dnsmasq: the header and question only, TC set, no
//                     records.
//     Either way the client retries over TCP. The two differ on the wire on purpose, each as
//     the server it replaces (dnsmasq_diff_test.py compares frontend-cache with dnsmasq).
//
// What stays with each server: frontend-cache caps and ages TTLs and writes its own header
// flags over the stored form (frontend-cache/cached_response.h); kubedns passes an
// upstream's bytes as they are when they fit.
//
// Pure functions on values; no thread affinity. FitReply allocates nothing unless it
// re-encodes (kWholeRRsets, into the caller's scratch vector).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/transport.h"
#include "common/server/admission.h"
#include "common/upstream/forwarder.h"

namespace kdns::server {

// What is kept of a client's query while its answer comes from an upstream.
struct ClientQuery {
  dns::Name qname;  // as the client spelt it (answers echo its case)
  dns::RrType qtype = dns::RrType::kA;
  dns::RrClass qclass = dns::RrClass::kIn;
  uint16_t id = 0;
  uint16_t limit_bytes = 512;  // the largest answer it may get (at most 65535)
  bool rd = false;
  bool cd = false;
  bool edns = false;       // it sent an OPT record: the answer carries ours
  bool dnssec_ok = false;  // its DO bit
  dns::Transport transport = dns::Transport::kUdp;

  static ClientQuery From(const Admission& admission);
  // The query as the reply needs it: the ID, QUERY, RD and CD, the question, and an EDNS
  // view with the DO bit (no options) when the client sent one.
  dns::Query query() const;
};

// How a reply too big for the client's limit is cut (the client then retries over TCP).
enum class Truncation : uint8_t {
  kWholeRRsets,  // re-encoded from the parsed reply, cut after the last whole RRset, TC set
  kEmpty,        // the header and question only, every count 0, TC set
};

// How the client's spelling of the name reaches the reply's question.
enum class QuestionEcho : uint8_t {
  kIfSameName,  // written when the reply's question name is the client's ignoring case
  kKnownSame,   // written at once: the caller matched the names (a cache hit, by its key)
};

// A reply to fit, as received from an upstream or as a cache keeps it.
struct ReplyToFit {
  std::span<const uint8_t> wire;  // header, one question, records; an OPT record only last
  size_t question_end = 0;        // offset just after the question (Truncation::kEmpty)
  bool has_opt = false;           // `wire` ends with the reply's own OPT record
  bool dnssec_ok = false;         // the DO bit of the OPT record written toward the client
  // kKnownSame needs question_end to be just after the client's name (and type and class).
  QuestionEcho echo = QuestionEcho::kIfSameName;
  // `wire` parsed: Truncation::kWholeRRsets re-encodes from it. Null for kEmpty.
  const dns::Message* message = nullptr;

  // An upstream's reply (ForwardOutcome::kAnswer), its OPT's DO bit passed on.
  static ReplyToFit From(const upstream::Result& result);
};

// The client's answer, and whether it was cut to fit.
struct Fitted {
  std::span<uint8_t> bytes;  // in `out` or in the scratch vector; empty: could not fit
  bool truncated = false;    // cut here (an upstream's own TC is not counted)
};

// Writes the answer to `query` from `reply`, at most limit_bytes (and out.size()).
//
// The reply's bytes pass with the client's ID and question case when they fit and carry the
// OPT the client gets: under kWholeRRsets the reply's own (present exactly when the client
// sent EDNS), under kEmpty ours, appended (`reply` has none: a cache drops it). Otherwise:
//   kWholeRRsets re-encodes reply.message into *scratch: the client's ID and name case (the
//     owners spelt as the reply's question too), our OPT when the client sent EDNS, or
//     SERVFAIL when an extended rcode needs the OPT it did not send (RFC 6891 §6.1.3); cut
//     after the last whole RRset that fits, with TC.
//   kEmpty writes the header and question with TC, every count 0, and our OPT.
// Empty bytes when the reply cannot be re-encoded or not even its question fits.
[[nodiscard]] Fitted FitReply(const ReplyToFit& reply, const dns::Query& query, size_t limit_bytes,
                              Truncation truncation, std::span<uint8_t> out,
                              std::vector<uint8_t>* scratch);

}  // namespace kdns::server

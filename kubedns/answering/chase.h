// The wire logic of kubedns's ExternalName chase, with no I/O (serving/dns_handler.h does the I/O):
// AppendChase completes an ExternalName CNAME chain (answerer.h, kExternalTarget) with the
// upstream's answer for the target: its records, its rcode (NXDOMAIN describes the last
// name, RFC 6604) and, for a negative answer, its SOA (RFC 2308). When the upstream is
// authoritative and did not follow a CNAME of its own, it says which name to ask next.
// Fitting a plain forwarded reply to the client is common/server/forward_reply.h's.
// FollowChain is the one rule, shared with autopath, for which of an upstream's records may
// enter our answer: only those on the chain from the name we asked (RFC 5452 §6).
//
// Pure functions on values; no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/dns/types.h"

namespace kdns::kubedns {

// The records of an answer section on the chain from `start` for `qtype`, in chain order:
// at each name, its records of `qtype` (any type for ANY) and its RRSIGs; where it has none,
// its CNAME, whose target is the next name. Records of any other owner, a second CNAME at a
// name, and records that do not continue the chain are left out: an upstream's reply must
// not put into our answer what we did not ask for (cache-poisoning shape, RFC 5452 §6).
struct Chain {
  std::vector<dns::ResourceRecord> records;
  dns::Name end;          // the last name reached: records of `qtype` are at it, or none are
  bool answered = false;  // `end` has records of `qtype`
  bool loop = false;      // a CNAME led back to a name already on the chain
};
Chain FollowChain(const std::vector<dns::ResourceRecord>& answers, const dns::Name& start,
                  dns::RrType qtype);

enum class ChaseStep : uint8_t {
  kDone,    // `partial` is the complete answer
  kFollow,  // the upstream's answer ends in a CNAME it did not follow: ask *next
  kFailed,  // the upstream's rcode cannot end a chain, or its CNAMEs loop (answer SERVFAIL)
};

// Appends `reply`'s chain from `target` (FollowChain; the upstream's answer for `target`,
// type `qtype`) to `partial` (our answer so far, its CNAME chain ending at `target`). Sets
// the rcode, and for a negative answer copies the reply's SOA for the chain's last name (its
// owner that name or an ancestor) into the authority section. kFollow when the reply is NOERROR,
// has no SOA, and its own CNAMEs lead from `target` to a name it gives no records for.
ChaseStep AppendChase(const dns::Message& reply, const dns::Name& target, dns::RrType qtype,
                      dns::Message* partial, dns::Name* next);

// CNAME records in the answer section (to bound a chain).
size_t CountCnames(const dns::Message& message);

}  // namespace kdns::kubedns

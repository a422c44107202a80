// The server's query fast path: decodes what a server needs to answer a query (header,
// the one question, EDNS) without allocating. Answer and authority records (normally
// absent) and additional records other than OPT are validated structurally and skipped.
// The Query borrows nothing but EDNS options, which point into the packet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "common/dns/edns.h"
#include "common/dns/errors.h"
#include "common/dns/header.h"
#include "common/dns/name.h"
#include "common/dns/types.h"

namespace kdns::dns {

struct Query {
  Header header;
  Name qname;  // case as received, so answers can echo it
  RrType qtype = RrType::kA;
  RrClass qclass = RrClass::kIn;
  std::optional<EdnsView> edns;  // options point into the packet
  size_t question_end = 0;       // offset just after the question
  size_t message_end = 0;        // offset just after the last record (admission checks it)
};

// Parses a query. QDCOUNT 0 is kNoQuestion and QDCOUNT > 1 kTooManyQuestions, so the
// server can answer FORMERR. Bytes after the last record are left to the caller's policy
// (message_end says where the records end; common/server/admission.h rejects them),
// an OPT outside the additional section or a second OPT is an error (RFC 6891 §6.1.1).
// Whenever the packet holds a full header, `query->header` is filled, even on error, so
// the caller can echo the ID in a FORMERR. Does not look at QR or the opcode: that is
// policy for the caller.
[[nodiscard]] ParseError ParseQuery(std::span<const uint8_t> packet, Query* query);

}  // namespace kdns::dns

// The text form of records and messages (RFC 1035 §5.1 master-file syntax, as dig prints
// it), for logs, debugging and tests that state expected records as text. Unknown types
// use the RFC 3597 generic form `\# <length> <hex>`. Pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/dns/errors.h"
#include "common/dns/message.h"
#include "common/dns/rdata.h"

namespace kdns::dns {

// A character-string in quotes, with `\"`, `\\` and `\DDD` for non-printable octets.
std::string CharacterStringToText(std::string_view text);
// "10 100 443 k.default.svc.cluster.local."; opaque rdata as `\# 4 0a000001`.
std::string RdataToText(const Rdata& rdata);
// "kubernetes.default.svc.cluster.local. 30 IN A 10.96.0.1"
std::string RecordToText(const ResourceRecord& record);
// "kubernetes.default.svc.cluster.local. IN A" (dig prints a ';' before it).
std::string QuestionToText(const Question& question);
// A dig-like dump: header line, flags and counts, OPT pseudosection, then the sections.
std::string MessageToText(const Message& message);

// Parses "owner [ttl] [class] type rdata" (TTL defaults to 0 and class to IN). Names are
// absolute whether or not they end in a dot. Typed rdata given in the generic `\#` form is
// decoded into its struct.
[[nodiscard]] ParseError RecordFromText(std::string_view text, ResourceRecord* record);

}  // namespace kdns::dns

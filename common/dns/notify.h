// DNS NOTIFY (RFC 1996): the message a server sends to say that a zone it serves changed,
// and the reply its receiver owes. kubedns tells the caches in front of it (frontend-cache)
// this way that its records changed, so they drop the zone's cached negative answers.
// Pure codec: no sockets, no logging.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"

namespace kdns::dns {

// A NOTIFY for `zone` (RFC 1996 §3.7: opcode NOTIFY, AA, the question <zone, SOA, IN>) with
// the zone's SOA `soa` in the answer section, which a receiver may use as a hint of the new
// serial (§3.7). Empty when `out` is too small.
std::span<const uint8_t> WriteNotify(uint16_t id, const Name& zone, const RdataSoa& soa,
                                     std::span<uint8_t> out);

// The reply to `notify` (a parsed NOTIFY): its ID, opcode and question, QR and AA set,
// NOERROR (RFC 1996 §4.7). Empty when `out` is too small.
std::span<const uint8_t> WriteNotifyReply(const Query& notify, std::span<uint8_t> out);

// The serial of the first SOA record for `zone` in `message`'s answer section: a NOTIFY's
// hint, or the answer to an SOA query. nullopt when there is none.
std::optional<uint32_t> SoaSerialOf(const Message& message, const Name& zone);

}  // namespace kdns::dns

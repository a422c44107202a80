#include "common/dns/parser.h"

#include "common/dns/wire_reader.h"

namespace kdns::dns {

ParseError ParseQuery(std::span<const uint8_t> packet, Query* query) {
  query->edns.reset();
  KDNS_RETURN_IF_PARSE_ERROR(ParseHeader(packet, &query->header));
  const Header& header = query->header;
  if (header.qdcount == 0) return ParseError::kNoQuestion;
  if (header.qdcount > 1) return ParseError::kTooManyQuestions;

  WireReader reader(packet);
  if (!reader.Skip(kHeaderSize)) return ParseError::kTruncated;
  if (reader.AtEnd()) return ParseError::kCountMismatch;
  KDNS_RETURN_IF_PARSE_ERROR(reader.ReadName(&query->qname));
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  if (!reader.ReadU16(&qtype) || !reader.ReadU16(&qclass)) return ParseError::kTruncated;
  query->qtype = static_cast<RrType>(qtype);
  query->qclass = static_cast<RrClass>(qclass);
  query->question_end = reader.offset();

  const size_t records = size_t{header.ancount} + header.nscount + header.arcount;
  const size_t first_additional = size_t{header.ancount} + header.nscount;
  for (size_t i = 0; i < records; ++i) {
    if (reader.AtEnd()) return ParseError::kCountMismatch;
    bool owner_is_root = false;
    KDNS_RETURN_IF_PARSE_ERROR(reader.SkipName(&owner_is_root));
    uint16_t type = 0;
    uint16_t cls = 0;
    uint32_t ttl = 0;
    uint16_t rdlength = 0;
    std::span<const uint8_t> rdata;
    if (!reader.ReadU16(&type) || !reader.ReadU16(&cls) || !reader.ReadU32(&ttl) ||
        !reader.ReadU16(&rdlength) || !reader.ReadBytes(rdlength, &rdata)) {
      return ParseError::kTruncated;
    }
    if (static_cast<RrType>(type) != RrType::kOpt) continue;
    if (i < first_additional) return ParseError::kOptNotInAdditional;
    if (!owner_is_root) return ParseError::kBadOpt;
    if (query->edns.has_value()) return ParseError::kMultipleOpt;
    EdnsView edns;
    KDNS_RETURN_IF_PARSE_ERROR(ParseOpt(cls, ttl, rdata, &edns));
    query->edns = edns;
  }
  query->message_end = reader.offset();
  return ParseError::kOk;
}

}  // namespace kdns::dns

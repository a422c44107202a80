#include "common/dns/message.h"

#include <algorithm>
#include <utility>

#include "common/dns/wire_reader.h"

namespace kdns::dns {

Rcode Message::rcode() const {
  unsigned low = static_cast<unsigned>(header.rcode) & 0x0F;
  unsigned high = edns.has_value() ? edns->extended_rcode : 0;
  return static_cast<Rcode>(high << 4 | low);
}

const std::vector<ResourceRecord>& Message::section(Section section) const {
  switch (section) {
    case Section::kAnswer:
      return answers;
    case Section::kAuthority:
      return authorities;
    default:
      return additionals;
  }
}

std::vector<ResourceRecord>& Message::section(Section section) {
  // The const overload's choice, on this message's own sections.
  return const_cast<std::vector<ResourceRecord>&>(std::as_const(*this).section(section));
}

ParseError ParseMessage(std::span<const uint8_t> packet, Message* message, TrailingData trailing,
                        size_t* end) {
  Message result;
  KDNS_RETURN_IF_PARSE_ERROR(ParseHeader(packet, &result.header));
  NameStarts starts(packet.size());
  WireReader reader(packet, 0, packet.size(), &starts);
  if (!reader.Skip(kHeaderSize)) return ParseError::kTruncated;

  // A question takes at least 5 octets; a lying count must not reserve memory.
  result.questions.reserve(std::min<size_t>(result.header.qdcount, reader.remaining() / 5));
  for (size_t i = 0; i < result.header.qdcount; ++i) {
    if (reader.AtEnd()) return ParseError::kCountMismatch;
    Question question;
    KDNS_RETURN_IF_PARSE_ERROR(reader.ReadName(&question.name));
    uint16_t type = 0;
    uint16_t cls = 0;
    if (!reader.ReadU16(&type) || !reader.ReadU16(&cls)) return ParseError::kTruncated;
    question.type = static_cast<RrType>(type);
    question.cls = static_cast<RrClass>(cls);
    result.questions.push_back(question);
  }

  const struct {
    Section section;
    uint16_t count;
  } sections[] = {{Section::kAnswer, result.header.ancount},
                  {Section::kAuthority, result.header.nscount},
                  {Section::kAdditional, result.header.arcount}};
  for (const auto& [section, count] : sections) {
    std::vector<ResourceRecord>& records = result.section(section);
    // Each record takes at least 11 octets; do not let a lying count reserve memory.
    records.reserve(std::min<size_t>(count, reader.remaining() / 11));
    for (size_t i = 0; i < count; ++i) {
      if (reader.AtEnd()) return ParseError::kCountMismatch;
      ResourceRecord record;
      KDNS_RETURN_IF_PARSE_ERROR(reader.ReadName(&record.owner));
      uint16_t type = 0;
      uint16_t cls = 0;
      uint16_t rdlength = 0;
      if (!reader.ReadU16(&type) || !reader.ReadU16(&cls) || !reader.ReadU32(&record.ttl_s) ||
          !reader.ReadU16(&rdlength) || reader.remaining() < rdlength) {
        return ParseError::kTruncated;
      }
      record.type = static_cast<RrType>(type);
      record.cls = static_cast<RrClass>(cls);
      if (record.type == RrType::kOpt) {
        if (section != Section::kAdditional) return ParseError::kOptNotInAdditional;
        if (!record.owner.IsRoot()) return ParseError::kBadOpt;
        if (result.edns.has_value()) return ParseError::kMultipleOpt;
        EdnsView view;
        KDNS_RETURN_IF_PARSE_ERROR(
            ParseOpt(cls, record.ttl_s, packet.subspan(reader.offset(), rdlength), &view));
        result.edns = Edns::FromView(view);
      } else {
        KDNS_RETURN_IF_PARSE_ERROR(ParseRdata(packet, reader.offset(), rdlength, record.type,
                                              record.cls, &record.rdata, &starts));
        records.push_back(std::move(record));
      }
      if (!reader.Skip(rdlength)) return ParseError::kTruncated;
    }
  }
  if (!reader.AtEnd() && trailing == TrailingData::kReject) return ParseError::kTrailingGarbage;
  if (end != nullptr) *end = reader.offset();
  *message = std::move(result);
  return ParseError::kOk;
}

}  // namespace kdns::dns

#include "common/dns/header.h"

namespace kdns::dns {

ParseError ParseHeader(std::span<const uint8_t> message, Header* header) {
  if (message.size() < kHeaderSize) return ParseError::kTruncated;
  auto u16 = [&message](size_t at) {
    return static_cast<uint16_t>(message[at] << 8 | message[at + 1]);
  };
  uint8_t flags1 = message[2];
  uint8_t flags2 = message[3];
  header->id = u16(0);
  header->qr = (flags1 & 0x80) != 0;
  header->opcode = static_cast<Opcode>((flags1 >> 3) & 0x0F);
  header->aa = (flags1 & 0x04) != 0;
  header->tc = (flags1 & 0x02) != 0;
  header->rd = (flags1 & 0x01) != 0;
  header->ra = (flags2 & 0x80) != 0;
  header->z = (flags2 & 0x40) != 0;
  header->ad = (flags2 & 0x20) != 0;
  header->cd = (flags2 & 0x10) != 0;
  header->rcode = static_cast<Rcode>(flags2 & 0x0F);
  header->qdcount = u16(4);
  header->ancount = u16(6);
  header->nscount = u16(8);
  header->arcount = u16(10);
  return ParseError::kOk;
}

void WriteHeader(const Header& header, std::span<uint8_t, kHeaderSize> out) {
  auto put16 = [&out](size_t at, uint16_t value) {
    out[at] = static_cast<uint8_t>(value >> 8);
    out[at + 1] = static_cast<uint8_t>(value);
  };
  put16(0, header.id);
  out[2] = static_cast<uint8_t>(
      (header.qr ? 0x80 : 0) | (static_cast<unsigned>(header.opcode) & 0x0F) << 3 |
      (header.aa ? 0x04 : 0) | (header.tc ? 0x02 : 0) | (header.rd ? 0x01 : 0));
  out[3] =
      static_cast<uint8_t>((header.ra ? 0x80 : 0) | (header.z ? 0x40 : 0) | (header.ad ? 0x20 : 0) |
                           (header.cd ? 0x10 : 0) | (static_cast<unsigned>(header.rcode) & 0x0F));
  put16(4, header.qdcount);
  put16(6, header.ancount);
  put16(8, header.nscount);
  put16(10, header.arcount);
}

}  // namespace kdns::dns

// The fixed 12-octet DNS header (RFC 1035 §4.1.1, flag bits from RFC 2535 and RFC 4035).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/dns/errors.h"
#include "common/dns/types.h"

namespace kdns::dns {

inline constexpr size_t kHeaderSize = 12;

struct Header {
  uint16_t id = 0;
  bool qr = false;
  Opcode opcode = Opcode::kQuery;
  bool aa = false;
  bool tc = false;
  bool rd = false;
  bool ra = false;
  bool z = false;
  bool ad = false;
  bool cd = false;
  // Only the low 4 bits travel in the header; EDNS carries the rest (RFC 6891 §6.1.3).
  Rcode rcode = Rcode::kNoError;
  uint16_t qdcount = 0;
  uint16_t ancount = 0;
  uint16_t nscount = 0;
  uint16_t arcount = 0;

  friend bool operator==(const Header&, const Header&) = default;
};

[[nodiscard]] ParseError ParseHeader(std::span<const uint8_t> message, Header* header);
// Writes the header into the first 12 bytes of `out` (which must hold at least 12).
void WriteHeader(const Header& header, std::span<uint8_t, kHeaderSize> out);

// The (non-extended) rcode in the header of `message`, a response this server built or
// checked; SERVFAIL for one too short to have a header.
inline Rcode RcodeOf(std::span<const uint8_t> message) {
  return message.size() >= kHeaderSize ? static_cast<Rcode>(message[3] & 0x0f) : Rcode::kServFail;
}

}  // namespace kdns::dns

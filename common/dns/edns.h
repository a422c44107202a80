// EDNS(0) as carried by the OPT pseudo-record (RFC 6891 §6.1): the requestor's UDP payload
// size in the CLASS field, extended rcode, version and DO bit in the TTL field, options in
// the rdata. EdnsView borrows the options from the packet (the query fast path allocates
// nothing); Edns owns them (full messages).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/dns/errors.h"

namespace kdns::dns {

// RFC 6891 §6.2.5: payload sizes below 512 are treated as 512.
inline constexpr uint16_t kMinUdpPayloadSize = 512;
// What we advertise (DNS flag day 2020).
inline constexpr uint16_t kDefaultUdpPayloadSize = 1232;
// Owner (root, 1) + type, class, TTL, rdlength (10).
inline constexpr size_t kOptFixedSize = 11;

struct EdnsView {
  uint16_t udp_payload_size = kDefaultUdpPayloadSize;  // as received
  uint8_t extended_rcode = 0;                          // the upper 8 bits of the 12-bit rcode
  uint8_t version = 0;
  bool dnssec_ok = false;
  uint16_t z = 0;                    // the 15 flag bits after DO, kept as received
  std::span<const uint8_t> options;  // option TLVs as on the wire, opaque

  // The payload size to honour: at least 512.
  uint16_t PayloadSize() const { return std::max(udp_payload_size, kMinUdpPayloadSize); }
};

struct Edns {
  uint16_t udp_payload_size = kDefaultUdpPayloadSize;
  uint8_t extended_rcode = 0;
  uint8_t version = 0;
  bool dnssec_ok = false;
  uint16_t z = 0;
  std::vector<uint8_t> options;

  static Edns FromView(const EdnsView& view);
  EdnsView View() const;
  uint16_t PayloadSize() const { return std::max(udp_payload_size, kMinUdpPayloadSize); }
  // The size of the OPT record on the wire.
  size_t WireSize() const { return kOptFixedSize + options.size(); }

  friend bool operator==(const Edns&, const Edns&) = default;
};

// Decodes the OPT fields; the owner name and section have been checked by the caller.
// Options must be well-formed TLVs (code, length, data) filling the rdata exactly.
[[nodiscard]] ParseError ParseOpt(uint16_t cls, uint32_t ttl, std::span<const uint8_t> rdata,
                                  EdnsView* edns);

}  // namespace kdns::dns

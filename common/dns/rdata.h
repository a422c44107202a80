// Typed rdata. The types a cluster DNS server serves or forwards get a struct; everything
// else stays opaque bytes (RFC 3597), and names inside opaque rdata are never decompressed
// or rewritten. A, AAAA and SRV are defined for class IN only (RFC 1035 §3.4, RFC 2782);
// in other classes they stay opaque too. Plain values, no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/errors.h"
#include "common/dns/name.h"
#include "common/dns/types.h"

namespace kdns::dns {

struct RdataOpaque {
  std::vector<uint8_t> bytes;
  friend bool operator==(const RdataOpaque&, const RdataOpaque&) = default;
};
struct RdataA {
  IpAddress address;  // v4
  friend bool operator==(const RdataA&, const RdataA&) = default;
};
struct RdataAaaa {
  IpAddress address;  // v6
  friend bool operator==(const RdataAaaa&, const RdataAaaa&) = default;
};
struct RdataNs {
  Name host;
  friend bool operator==(const RdataNs&, const RdataNs&) = default;
};
struct RdataCname {
  Name target;
  friend bool operator==(const RdataCname&, const RdataCname&) = default;
};
struct RdataPtr {
  Name target;
  friend bool operator==(const RdataPtr&, const RdataPtr&) = default;
};
struct RdataDname {
  Name target;
  friend bool operator==(const RdataDname&, const RdataDname&) = default;
};
struct RdataSoa {
  Name mname;
  Name rname;
  uint32_t serial = 0;
  uint32_t refresh_s = 0;
  uint32_t retry_s = 0;
  uint32_t expire_s = 0;
  uint32_t minimum_s = 0;  // the negative-caching TTL (RFC 2308 §4)
  friend bool operator==(const RdataSoa&, const RdataSoa&) = default;
};
struct RdataMx {
  uint16_t preference = 0;
  Name exchange;
  friend bool operator==(const RdataMx&, const RdataMx&) = default;
};
struct RdataSrv {
  uint16_t priority = 0;
  uint16_t weight = 0;
  uint16_t port = 0;
  Name target;
  friend bool operator==(const RdataSrv&, const RdataSrv&) = default;
};
// One or more character-strings of at most 255 octets each (RFC 1035 §3.3.14).
struct RdataTxt {
  std::vector<std::string> strings;
  friend bool operator==(const RdataTxt&, const RdataTxt&) = default;
};
struct RdataHinfo {
  std::string cpu;
  std::string os;
  friend bool operator==(const RdataHinfo&, const RdataHinfo&) = default;
};

using Rdata = std::variant<RdataOpaque, RdataA, RdataAaaa, RdataNs, RdataCname, RdataPtr,
                           RdataDname, RdataSoa, RdataMx, RdataSrv, RdataTxt, RdataHinfo>;

// Whether (type, class) has a typed representation here; if not, rdata is RdataOpaque.
bool IsTypedRdata(RrType type, RrClass cls);
// Whether `rdata` can be written as (type, class): the matching struct, or opaque bytes.
bool RdataMatches(const Rdata& rdata, RrType type, RrClass cls);

class NameStarts;

// Parses the rdata at [offset, offset + rdlength) of `message`. Names inside may point
// anywhere earlier in the message, or, given `starts` (see NameStarts), only to where an
// earlier name began; the names read are added to it. Typed rdata must use exactly
// rdlength octets.
[[nodiscard]] ParseError ParseRdata(std::span<const uint8_t> message, size_t offset,
                                    size_t rdlength, RrType type, RrClass cls, Rdata* rdata,
                                    NameStarts* starts = nullptr);

}  // namespace kdns::dns

// The client-address EDNS(0) option: how a trusted forwarder in front of a server
// (frontend-cache in front of kubedns, in one pod) tells the server whom a query is for,
// so that the server's per-client limits, query log and /debug/top-clients see the pod
// that asked and not the forwarder's loopback address (DESIGN §7, "Tenants").
//
// A private-use option code (RFC 6891 §9: 65001-65534), kDefaultClientAddressOption unless
// both programs are told another (--client-address-option). Its data:
//
//   FAMILY   2 octets   1: IPv4, 2: IPv6 (IANA address family numbers, as ECS uses them,
//                       RFC 7871 §6)
//   PORT     2 octets   the client's source port (for the query log)
//   ADDRESS  4 or 16 octets: the whole address, never a prefix
//
// Not ECS (RFC 7871) with a full-length prefix, because ECS means something else to
// everyone else: a server that understands it answers per subnet and echoes a scope, a
// cache keys on it, a resolver may pass it on or strip it by its own policy, and a pod may
// send one itself. A private code means nothing outside this pair of programs: unknown to
// any other server, which ignores it (RFC 6891 §6.1.2), and never confused with a
// client's own ECS.
//
// Pure codec, no I/O; the trust decision (who may send it) is the server's
// (common/server/admission.h), the decision whom to send it to the forwarder's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/base/ip_address.h"

namespace kdns::dns {

// The private-use range of EDNS(0) option codes (RFC 6891 §9).
inline constexpr uint16_t kMinPrivateOptionCode = 65001;
inline constexpr uint16_t kMaxPrivateOptionCode = 65534;
inline constexpr uint16_t kDefaultClientAddressOption = 65432;

// Code, length, family, port and an IPv6 address: the largest option.
inline constexpr size_t kMaxClientAddressOptionBytes = 4 + 2 + 2 + IpAddress::kV6Size;

struct ClientAddress {
  IpAddress address;
  uint16_t port = 0;

  friend bool operator==(const ClientAddress&, const ClientAddress&) = default;
};

enum class ClientAddressFound : uint8_t {
  kAbsent,     // no option with that code
  kFound,      // one, well-formed: *out is set
  kMalformed,  // a wrong length or family, or the option more than once
};

// Looks for the option `code` among `options` (EdnsView::options: TLVs that ParseOpt has
// checked; a truncated TLV ends the walk as kAbsent).
ClientAddressFound FindClientAddress(std::span<const uint8_t> options, uint16_t code,
                                     ClientAddress* out);

// Writes the option (code, length, data) for `client` into `out`; returns its size, 0 when
// `out` is smaller than that.
size_t WriteClientAddressOption(const ClientAddress& client, uint16_t code, std::span<uint8_t> out);

}  // namespace kdns::dns

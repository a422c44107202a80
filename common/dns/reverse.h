// Reverse-lookup names (RFC 1035 §3.5 in-addr.arpa, RFC 3596 §2.5 ip6.arpa) to and from
// addresses. Pure functions.
#pragma once

#include <optional>

#include "common/base/ip_address.h"
#include "common/dns/name.h"

namespace kdns::dns {

// "1.0.0.10.in-addr.arpa." for 10.0.0.1; 32 nibble labels + "ip6.arpa." for v6.
Name ReverseName(const IpAddress& address);
// The address a full-length reverse name stands for (case-insensitive). Partial names
// (a /24 zone like "0.0.10.in-addr.arpa."), extra labels, or labels that are not decimal
// octets / single hex nibbles give nullopt.
std::optional<IpAddress> AddressFromReverseName(const Name& name);

// "in-addr.arpa." and "ip6.arpa.".
const Name& InAddrArpa();
const Name& Ip6Arpa();
// True for a name under (or at) either of them, in any case.
bool IsReverseName(const Name& name);

}  // namespace kdns::dns

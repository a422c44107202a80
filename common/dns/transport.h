// Transport: how a DNS message travels, UDP datagrams or a TCP stream (RFC 1035 §4.2). The
// one name for it in the tree: the serving skeleton (common/server) records it per query,
// the answering code sizes replies by it, and the upstream client (common/upstream) asks
// over the client's transport. A plain value; no state, no thread affinity.
#pragma once

#include <cstdint>

namespace kdns::dns {

enum class Transport : uint8_t { kUdp, kTcp };

// "udp" or "tcp", for logs and metric labels.
constexpr const char* TransportName(Transport transport) {
  return transport == Transport::kTcp ? "tcp" : "udp";
}

}  // namespace kdns::dns

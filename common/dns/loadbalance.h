// Round-robin load balancing of address records (--loadbalance on kubedns and
// frontend-cache; CoreDNS's loadbalance plugin, dnsmasq's rotation of cached answers).
//
// RotateAddressRrsets rotates each A or AAAA RRset of a finished reply in place: the
// records of one RRset (consecutive records of one section with the same owner, type and
// class) trade places, so that successive turns put each of them first in turn. Only the
// part after each owner moves (type to rdata, the same size throughout the RRset): owners
// stay where they were written, so compression pointers keep their meaning.
// Nothing else moves: CNAMEs keep their chain order ahead of the addresses, other RRsets
// and sections keep their places. An RRSIG stays valid, since it signs the RRset in
// canonical order (RFC 4034 §6.3), not in the order sent.
//
// Where CoreDNS differs: it shuffles at random (a Fisher-Yates pass drawn from message IDs)
// where we rotate, so every position comes first equally often over any run of queries; it
// also shuffles MX records, and regroups each section (CNAMEs first, then the other records,
// then every A and AAAA together), where we leave the record order alone but for the
// rotation inside each address RRset.
//
// Pure and allocation-free (a run's record offsets, 8 KiB, live on the stack); the turn
// comes from the caller. NextRoundRobinTurn gives a
// counter per thread, so no thread shares a cache line with another to balance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace kdns::dns {

enum class LoadBalance : uint8_t {
  kOff,         // answers keep the order they were written or received in
  kRoundRobin,  // A/AAAA RRsets rotate one place per answer
};

std::string_view LoadBalanceName(LoadBalance mode);
// "round_robin" or "off"; false for anything else.
[[nodiscard]] bool ParseLoadBalance(std::string_view text, LoadBalance* mode);

// Rotates every A and AAAA RRset of two or more records in `message` left by `turn` (modulo
// its size) and returns how many it rotated. Only NOERROR replies, and never a zone transfer
// (as CoreDNS). A message that does not parse is left alone from the first record that does
// not.
size_t RotateAddressRrsets(std::span<uint8_t> message, uint32_t turn);

// This thread's next turn: 0, 1, 2, ... per thread.
inline uint32_t NextRoundRobinTurn() {
  thread_local uint32_t turn = 0;
  return turn++;
}

}  // namespace kdns::dns

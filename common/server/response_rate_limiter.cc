#include "common/server/response_rate_limiter.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "common/dns/header.h"
#include "common/dns/name.h"
#include "common/dns/wire_reader.h"
#include "common/loop/socket_address.h"

namespace kdns::server {
namespace {

// Distinguishes the four buckets of one name.
constexpr uint64_t kKindSalt[] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                  0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull};

uint64_t NetblockOf(const loop::SocketAddress& client, const ResponseRateOptions& options) {
  if (client.is_v4()) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(client.sockaddr_ptr());
    const int length = std::min<int>(options.prefix_v4, 32);
    const uint32_t address = ntohl(in->sin_addr.s_addr);
    const uint32_t mask = length == 0 ? 0 : ~uint32_t{0} << (32 - length);
    return MixTag((uint64_t{4} << 32) | (address & mask));
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(client.sockaddr_ptr());
  const auto* bytes = reinterpret_cast<const uint8_t*>(&in6->sin6_addr);
  uint64_t tag = 6;
  const int length = std::min<int>(options.prefix_v6, 128);
  for (int i = 0; i < 16; ++i) {
    const int bits = std::clamp(length - 8 * i, 0, 8);
    const uint8_t byte = bits == 0 ? 0 : static_cast<uint8_t>(bytes[i] & (0xff << (8 - bits)));
    tag = MixTag(tag ^ byte);
  }
  return tag;
}

}  // namespace

ResponseKind ClassifyResponse(std::span<const uint8_t> response, uint64_t* key) {
  *key = 0;
  dns::Header header;
  if (dns::ParseHeader(response, &header) != dns::ParseError::kOk || header.qdcount == 0) {
    return ResponseKind::kError;
  }
  if (header.rcode != dns::Rcode::kNoError && header.rcode != dns::Rcode::kNxDomain) {
    return ResponseKind::kError;
  }
  dns::WireReader reader(response, dns::kHeaderSize, response.size());
  dns::Name qname;
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  if (reader.ReadName(&qname) != dns::ParseError::kOk || !reader.ReadU16(&qtype) ||
      !reader.ReadU16(&qclass)) {
    return ResponseKind::kError;
  }
  if (header.rcode == dns::Rcode::kNoError) {
    if (header.ancount > 0) {
      *key = MixTag(qname.Hash() ^ (uint64_t{qtype} << 48));
      return ResponseKind::kAnswer;
    }
    *key = qname.Hash();
    return ResponseKind::kNoData;
  }
  // NXDOMAIN: by the zone, the owner of the first authority record (its SOA), past any
  // CNAMEs in the answer section. Without one, by the question's parent.
  for (uint16_t i = 1; i < header.qdcount; ++i) {
    if (reader.SkipName() != dns::ParseError::kOk || !reader.Skip(4)) return ResponseKind::kError;
  }
  bool found = false;
  for (uint16_t i = 0; i < header.ancount; ++i) {
    uint16_t rdlength = 0;
    if (reader.SkipName() != dns::ParseError::kOk || !reader.Skip(8) ||
        !reader.ReadU16(&rdlength) || !reader.Skip(rdlength)) {
      break;
    }
    found = i + 1 == header.ancount;
  }
  dns::Name zone;
  if ((found || header.ancount == 0) && header.nscount > 0 &&
      reader.ReadName(&zone) == dns::ParseError::kOk) {
    *key = zone.Hash();
  } else {
    *key = qname.Parent().Hash();
  }
  return ResponseKind::kNxDomain;
}

ResponseRateLimiter::ResponseRateLimiter(const ResponseRateOptions& options)
    : options_(options),
      emission_ns_(options.responses_per_second == 0
                       ? 0
                       : std::max<uint64_t>(1, 1'000'000'000ull / options.responses_per_second)),
      tolerance_ns_(emission_ns_ * (std::max(options.responses_per_second, uint32_t{1}) - 1)),
      table_(options.responses_per_second == 0 ? 0 : options.slots) {}

ResponseVerdict ResponseRateLimiter::Check(const loop::SocketAddress& client,
                                           std::span<const uint8_t> response, uint64_t now_ns) {
  if (!enabled() || !(client.is_v4() || client.is_v6())) return ResponseVerdict::kSend;
  if (!options_.exempt.empty()) {
    const IpAddress ip = loop::IpOf(client);
    for (const IpPrefix& prefix : options_.exempt) {
      if (prefix.Contains(ip)) return ResponseVerdict::kSend;
    }
  }
  uint64_t key = 0;
  const ResponseKind kind = ClassifyResponse(response, &key);
  const uint64_t tag =
      MixTag(NetblockOf(client, options_) ^ key ^ kKindSalt[static_cast<size_t>(kind)]);
  bool claimed = false;
  RateTable::Slot& slot = table_.Find(tag, now_ns, &claimed);
  if (RateTable::Charge(slot, now_ns, emission_ns_, tolerance_ns_)) return ResponseVerdict::kSend;
  const uint32_t limited = slot.limited.load(std::memory_order_relaxed);
  if (options_.slip != 0 && limited % options_.slip == 0) {
    slipped_.fetch_add(1, std::memory_order_relaxed);
    return ResponseVerdict::kSlip;
  }
  return ResponseVerdict::kDrop;
}

size_t WriteLimitedReply(std::span<const uint8_t> message, LimitedReply kind,
                         std::span<uint8_t> out) {
  dns::Header header;
  if (dns::ParseHeader(message, &header) != dns::ParseError::kOk || header.qdcount == 0) return 0;
  dns::WireReader reader(message, dns::kHeaderSize, message.size());
  if (reader.SkipName() != dns::ParseError::kOk || !reader.Skip(4)) return 0;
  const size_t size = reader.offset();
  if (size > out.size()) return 0;
  // The first question is the message's first name: a pointer in it cannot be copied.
  const std::span<const uint8_t> question =
      message.subspan(dns::kHeaderSize, size - dns::kHeaderSize);
  for (size_t i = 0; i < question.size() - 4;) {
    const uint8_t length = question[i];
    if ((length & 0xc0) != 0) return 0;
    if (length == 0) break;
    i += 1 + size_t{length};
  }
  if (!header.qr) header.ra = true;  // answering a query: we resolve
  header.qr = true;
  if (kind == LimitedReply::kRefused) {
    header.tc = false;
    header.rcode = dns::Rcode::kRefused;
  } else {
    header.tc = true;
  }
  header.qdcount = 1;
  header.ancount = header.nscount = header.arcount = 0;
  dns::WriteHeader(header, out.first<dns::kHeaderSize>());
  std::memcpy(out.data() + dns::kHeaderSize, question.data(), question.size());
  return size;
}

}  // namespace kdns::server

#include "frontend-cache/cached_response.h"

#include <glog/logging.h>

#include <algorithm>
#include <limits>

#include "common/dns/builder.h"
#include "common/dns/header.h"
#include "common/dns/message.h"
#include "common/dns/wire_reader.h"
#include "common/server/forward_reply.h"

namespace kdns::frontend {
namespace {

using dns::RrType;
using dns::Section;

// Header flag bits (RFC 1035 §4.1.1, RFC 4035 §3.2).
constexpr uint8_t kQrBit = 0x80;
constexpr uint8_t kTcBit = 0x02;
constexpr uint8_t kRdBit = 0x01;
constexpr uint8_t kRaBit = 0x80;
constexpr uint8_t kAdBit = 0x20;
constexpr uint8_t kCdBit = 0x10;
constexpr uint8_t kRcodeMask = 0x0F;

// SOA rdata: two names (at least one octet each) and five 32-bit fields.
constexpr size_t kMinSoaRdataSize = 2 + 20;

uint32_t LoadU32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
void StoreU32(uint8_t* p, uint32_t value) {
  p[0] = static_cast<uint8_t>(value >> 24);
  p[1] = static_cast<uint8_t>(value >> 16);
  p[2] = static_cast<uint8_t>(value >> 8);
  p[3] = static_cast<uint8_t>(value);
}
uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
void StoreU16(uint8_t* p, uint16_t value) {
  p[0] = static_cast<uint8_t>(value >> 8);
  p[1] = static_cast<uint8_t>(value);
}

// RFC 2181 §8: a TTL with the top bit set is read as 0. Then the --min/--max-cache-ttl caps.
uint32_t CapTtl(uint32_t ttl_s, const CachePolicy& policy) {
  if (ttl_s > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) ttl_s = 0;
  ttl_s = std::max(ttl_s, policy.min_ttl_s);
  if (policy.max_ttl_s) ttl_s = std::min(ttl_s, *policy.max_ttl_s);
  return ttl_s;
}

}  // namespace

ResponseAnalysis AnalyzeResponse(std::span<const uint8_t> response, const dns::Name& qname,
                                 dns::RrType qtype, dns::RrClass qclass, const CachePolicy& policy,
                                 std::vector<uint16_t>* ttl_offsets) {
  ttl_offsets->clear();
  ResponseAnalysis analysis;
  dns::Header header;
  if (dns::ParseHeader(response, &header) != dns::ParseError::kOk || !header.qr ||
      header.opcode != dns::Opcode::kQuery || header.qdcount != 1 ||
      response.size() > dns::kMaxMessageSize) {
    return analysis;  // kMalformed
  }
  dns::WireReader reader(response, dns::kHeaderSize, response.size());
  dns::Name name;
  uint16_t type = 0;
  uint16_t cls = 0;
  if (reader.ReadName(&name) != dns::ParseError::kOk || !reader.ReadU16(&type) ||
      !reader.ReadU16(&cls)) {
    return analysis;
  }
  analysis.question_end = reader.offset();
  if (name != qname || type != static_cast<uint16_t>(qtype) ||
      cls != static_cast<uint16_t>(qclass)) {
    analysis.result = Cacheability::kQuestionMismatch;
    return analysis;
  }

  const uint32_t counts[] = {header.ancount, header.nscount, header.arcount};
  uint32_t answer_min_ttl = std::numeric_limits<uint32_t>::max();
  std::optional<uint32_t> soa_negative_ttl;
  std::optional<size_t> opt_start;
  uint8_t extended_rcode = 0;
  for (int section = 0; section < 3; ++section) {
    for (uint32_t i = 0; i < counts[section]; ++i) {
      if (opt_start) {
        analysis.result = Cacheability::kOptNotLast;
        return analysis;
      }
      const size_t start = reader.offset();
      uint32_t ttl = 0;
      uint16_t rdlength = 0;
      if (reader.SkipName() != dns::ParseError::kOk || !reader.ReadU16(&type) ||
          !reader.ReadU16(&cls)) {
        return analysis;
      }
      const size_t ttl_offset = reader.offset();
      if (!reader.ReadU32(&ttl) || !reader.ReadU16(&rdlength)) return analysis;
      const size_t rdata_offset = reader.offset();
      if (!reader.Skip(rdlength)) return analysis;
      if (type == static_cast<uint16_t>(RrType::kOpt)) {
        if (section != 2) return analysis;  // RFC 6891 §6.1.1
        opt_start = start;
        extended_rcode = static_cast<uint8_t>(ttl >> 24);
        continue;
      }
      ttl_offsets->push_back(static_cast<uint16_t>(ttl_offset));
      if (section == 0) answer_min_ttl = std::min(answer_min_ttl, CapTtl(ttl, policy));
      if (section == 1 && type == static_cast<uint16_t>(RrType::kSoa) && !soa_negative_ttl &&
          rdlength >= kMinSoaRdataSize) {
        // RFC 2308 §5: the negative TTL is the smaller of the SOA's TTL and its MINIMUM,
        // the last field of the rdata whatever the compression of the two names.
        const uint32_t minimum = LoadU32(response.data() + rdata_offset + rdlength - 4);
        soa_negative_ttl = std::min(CapTtl(ttl, CachePolicy{}), CapTtl(minimum, CachePolicy{}));
        analysis.soa_ttl_offset = ttl_offset;
      }
    }
  }
  analysis.stored_size = opt_start ? *opt_start : reader.offset();  // drops trailing bytes

  if (header.tc) {
    analysis.result = Cacheability::kTruncated;
    return analysis;
  }
  const auto rcode =
      static_cast<dns::Rcode>((extended_rcode << 4) | static_cast<uint16_t>(header.rcode));
  if (rcode != dns::Rcode::kNoError && rcode != dns::Rcode::kNxDomain) {
    analysis.result = Cacheability::kUncachedRcode;
    return analysis;
  }
  analysis.negative = rcode == dns::Rcode::kNxDomain || header.ancount == 0;
  if (analysis.negative && !policy.negative_caching &&
      std::none_of(policy.exact_negative_zones.begin(), policy.exact_negative_zones.end(),
                   [&qname](const dns::Name& zone) { return qname.IsSubdomainOf(zone); })) {
    analysis.result = Cacheability::kNegativeDisabled;
    return analysis;
  }
  uint32_t lifetime_s = answer_min_ttl;
  if (analysis.negative) {
    uint32_t negative_ttl = 0;
    if (soa_negative_ttl) {
      negative_ttl = *soa_negative_ttl;
      if (policy.neg_ttl_s) negative_ttl = std::min(negative_ttl, *policy.neg_ttl_s);
    } else if (policy.neg_ttl_s) {
      negative_ttl = *policy.neg_ttl_s;
    }
    // A negative answer that carries no TTL at all stays uncached, whatever the floor.
    if (negative_ttl > 0 || soa_negative_ttl) negative_ttl = CapTtl(negative_ttl, policy);
    lifetime_s = std::min(lifetime_s, negative_ttl);
  }
  if (lifetime_s == 0) {
    analysis.result = Cacheability::kZeroTtl;
    return analysis;
  }
  if (!analysis.negative) analysis.soa_ttl_offset.reset();
  analysis.lifetime_s = lifetime_s;
  analysis.result = Cacheability::kCacheable;
  return analysis;
}

void PrepareStoredResponse(std::span<uint8_t> stored, const ResponseAnalysis& analysis,
                           std::span<const uint16_t> ttl_offsets, const CachePolicy& policy) {
  DCHECK_GT(analysis.stored_size, 0u);
  DCHECK_EQ(stored.size(), analysis.stored_size);
  for (uint16_t offset : ttl_offsets) {
    StoreU32(&stored[offset], CapTtl(LoadU32(&stored[offset]), policy));
  }
  // A negative entry's SOA tells clients how long the entry lives (only cached entries have
  // a lifetime; a reply passed through keeps its own SOA TTL).
  if (analysis.result == Cacheability::kCacheable && analysis.soa_ttl_offset) {
    StoreU32(&stored[*analysis.soa_ttl_offset], analysis.lifetime_s);
  }
  // The records kept are those with a TTL offset: fix ARCOUNT when the OPT record went.
  const uint16_t kept_additional =
      static_cast<uint16_t>(ttl_offsets.size() - LoadU16(&stored[6]) - LoadU16(&stored[8]));
  StoreU16(&stored[10], kept_additional);
  for (size_t i = dns::kHeaderSize; i + 4 < analysis.question_end; ++i) {
    stored[i] = dns::ToLowerAscii(stored[i]);
  }
}

size_t WriteCachedResponse(std::span<const uint8_t> stored, size_t question_end,
                           std::span<const uint16_t> ttl_offsets, const dns::Query& query,
                           const TtlRewrite& ttl, std::span<uint8_t> out, size_t max_size_bytes) {
  // The client-facing part (ID, question case, our OPT, TC with no records when it does not
  // fit) is common/server's; the stored form has no OPT and the client's DO bit is echoed.
  // The entry's name is the query's ignoring case (the key's, or checked by AnalyzeResponse),
  // so the client's spelling is written without comparing again.
  server::ReplyToFit reply;
  reply.wire = stored;
  reply.question_end = question_end;
  reply.dnssec_ok = query.edns && query.edns->dnssec_ok;
  reply.echo = server::QuestionEcho::kKnownSame;
  const server::Fitted fitted =
      server::FitReply(reply, query, max_size_bytes, server::Truncation::kEmpty, out, nullptr);
  if (fitted.bytes.empty()) return 0;

  // Our header flags, not the upstream's: the entry answers every client alike.
  uint8_t* p = out.data();
  p[2] =
      kQrBit | (query.header.rd ? kRdBit : 0) | (fitted.truncated ? kTcBit : 0);  // opcode 0, AA 0
  // AD only when the client asked for it, by AD or DO (RFC 6840 §5.8).
  const bool ad =
      (stored[3] & kAdBit) && (query.header.ad || (query.edns && query.edns->dnssec_ok));
  p[3] = kRaBit | (ad ? kAdBit : 0) | (query.header.cd ? kCdBit : 0) | (stored[3] & kRcodeMask);
  if (!fitted.truncated) {
    for (uint16_t offset : ttl_offsets) {
      uint32_t value = ttl.fixed_ttl ? *ttl.fixed_ttl : LoadU32(p + offset);
      if (!ttl.fixed_ttl) value = value > ttl.age_s ? value - ttl.age_s : 0;
      StoreU32(p + offset, value);
    }
  }
  return fitted.bytes.size();
}

size_t WriteForwardedResponse(std::span<const uint8_t> reply, const dns::Query& query,
                              const CachePolicy& policy, std::vector<uint8_t>* scratch,
                              std::vector<uint16_t>* ttl_offsets, std::span<uint8_t> out,
                              size_t max_size_bytes) {
  const ResponseAnalysis analysis =
      AnalyzeResponse(reply, query.qname, query.qtype, query.qclass, policy, ttl_offsets);
  // stored_size is set once the whole reply was walked, whatever its cacheability.
  if (analysis.stored_size == 0) return 0;
  scratch->assign(reply.begin(), reply.begin() + static_cast<ptrdiff_t>(analysis.stored_size));
  PrepareStoredResponse(*scratch, analysis, *ttl_offsets, policy);
  const size_t size = WriteCachedResponse(*scratch, analysis.question_end, *ttl_offsets, query,
                                          TtlRewrite{}, out, max_size_bytes);
  // The upstream's own TC stays: what it sent is partial, the client must retry over TCP.
  if (size > 0 && analysis.result == Cacheability::kTruncated) out[2] |= kTcBit;
  return size;
}

bool StripAaaa(std::span<const uint8_t> reply, std::vector<uint8_t>* out) {
  dns::Message message;
  if (dns::ParseMessage(reply, &message, dns::TrailingData::kIgnore) != dns::ParseError::kOk) {
    return false;
  }
  auto is_aaaa = [](const dns::ResourceRecord& record) {
    return record.type == dns::RrType::kAaaa;
  };
  bool any = false;
  for (auto section :
       {dns::Section::kAnswer, dns::Section::kAuthority, dns::Section::kAdditional}) {
    any = any ||
          std::any_of(message.section(section).begin(), message.section(section).end(), is_aaaa);
  }
  if (!any) return false;
  // Removing records only shrinks the message, so the reply's own size is room enough.
  std::vector<uint8_t> buffer(std::max(reply.size(), dns::kHeaderSize));
  dns::MessageBuilder builder(buffer, dns::kMaxMessageSize);
  builder.header() = message.header;
  builder.header().rcode = message.rcode();
  if (message.edns && builder.SetEdns(message.edns->View()) != dns::BuildError::kOk) return false;
  for (const dns::Question& question : message.questions) {
    if (builder.AddQuestion(question.name, question.type, question.cls) != dns::BuildError::kOk) {
      return false;
    }
  }
  for (auto section :
       {dns::Section::kAnswer, dns::Section::kAuthority, dns::Section::kAdditional}) {
    for (const dns::ResourceRecord& record : message.section(section)) {
      if (is_aaaa(record)) continue;
      if (builder.AddRecord(section, record) != dns::BuildError::kOk) return false;
    }
  }
  const std::span<const uint8_t> written = builder.Finish();
  out->assign(written.begin(), written.end());
  return true;
}

}  // namespace kdns::frontend

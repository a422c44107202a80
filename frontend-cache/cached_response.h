// The wire-level half of the response cache: deciding whether and for how long an upstream
// reply may be cached (RFC 2308 negative caching, TTL caps), preparing the bytes to keep,
// and writing a cached reply for a client without re-parsing it.
//
// At insert, AnalyzeResponse walks the reply once with the codec's WireReader and records
// the offset of every TTL field; PrepareStoredResponse then rewrites those TTLs to their
// capped values, lower-cases the question name and drops the OPT record (the reply's EDNS
// belongs to our upstream exchange, not to the client). At serve, WriteCachedResponse is
// a memcpy plus a few stores: the client-facing part is common/server's FitReply with
// Truncation::kEmpty (the client's ID, the client's question name bytes -- same length as
// the key's, so every compression pointer into it stays valid and answer owners compressed
// to it echo the client's case --, a fresh OPT record when the client sent EDNS, TC with no
// records when the whole does not fit, as dnsmasq does); what is the cache's own stays here:
// our header flags and each TTL minus the entry's age. It allocates nothing.
//
// Pure functions, no state, no thread affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/types.h"

namespace kdns::frontend {

// RFC 8767 §4: the TTL of records served stale.
inline constexpr uint32_t kStaleTtlS = 30;

struct CachePolicy {
  // Every record TTL is raised to at least min_ttl_s and lowered to at most max_ttl_s
  // (--min-cache-ttl, --max-cache-ttl); this is also what clients are told.
  uint32_t min_ttl_s = 0;
  std::optional<uint32_t> max_ttl_s;
  // RFC 2308 negative caching; false is --no-negcache.
  bool negative_caching = true;
  // Zones whose negative answers are cached even under --no-negcache (--serial-zones,
  // lower case): they stay exact, dropped when the zone's serial changes (zone_serials.h),
  // so kube-dns's reason to turn negative caching off does not apply to them.
  std::vector<dns::Name> exact_negative_zones;
  // --neg-ttl: the TTL of negative replies without an SOA (dnsmasq's meaning; without it
  // such replies are not cached) and, our addition, a cap on the SOA-derived TTL.
  std::optional<uint32_t> neg_ttl_s;
};

enum class Cacheability : uint8_t {
  kCacheable,
  kMalformed,         // does not parse, or not a reply with one question
  kQuestionMismatch,  // the question is not the key's
  kTruncated,         // TC set: the client must retry over TCP (RFC 2181 §9)
  kUncachedRcode,     // SERVFAIL, REFUSED, FORMERR, ...: never cached
  kNegativeDisabled,  // NXDOMAIN/NODATA under --no-negcache
  kZeroTtl,           // lifetime 0 (TTL 0, or negative without SOA or --neg-ttl)
  kOptNotLast,        // an OPT record followed by other records (not seen in practice)
  kTooLarge,          // over --cache-entry-max-bytes (decided by the Cache, not here)
};

struct ResponseAnalysis {
  Cacheability result = Cacheability::kMalformed;
  bool negative = false;                 // NXDOMAIN, or NOERROR without answers (NODATA)
  uint32_t lifetime_s = 0;               // how long the entry is fresh
  size_t stored_size = 0;                // bytes kept: the reply without its OPT record
  size_t question_end = 0;               // offset just after the question
  std::optional<size_t> soa_ttl_offset;  // negative replies: the SOA's TTL (set to lifetime)
};

// Walks `response` (an upstream reply to qname/qtype/qclass) and fills `ttl_offsets` (cleared
// first) with the offset of the TTL field of every record kept. Lifetime: the smallest
// capped TTL of the answer section; for negative replies min(SOA TTL, SOA MINIMUM) of the
// authority SOA (RFC 2308 §5), capped by neg_ttl_s, or neg_ttl_s when there is no SOA.
ResponseAnalysis AnalyzeResponse(std::span<const uint8_t> response, const dns::Name& qname,
                                 dns::RrType qtype, dns::RrClass qclass, const CachePolicy& policy,
                                 std::vector<uint16_t>* ttl_offsets);

// Turns `stored` (the first analysis.stored_size bytes of the reply) into the cached form:
// TTLs capped (the SOA of a negative reply gets the lifetime, RFC 2308 §5), ARCOUNT without
// the OPT record, question name lower-cased.
void PrepareStoredResponse(std::span<uint8_t> stored, const ResponseAnalysis& analysis,
                           std::span<const uint16_t> ttl_offsets, const CachePolicy& policy);

// How the TTLs of a cached reply are written.
struct TtlRewrite {
  uint32_t age_s = 0;                 // subtracted from each TTL, never below 0
  std::optional<uint32_t> fixed_ttl;  // every TTL set to this instead (stale answers)
};

// Writes the reply to `query` from a prepared entry into `out`, at most max_size_bytes
// (and out.size()). When the whole reply does not fit, writes the header and question with
// TC set and no records (server::Truncation::kEmpty), so the client retries over TCP. Returns the
// size written, 0 when not even that fits. The query's name must equal the entry's
// (case-insensitively).
size_t WriteCachedResponse(std::span<const uint8_t> stored, size_t question_end,
                           std::span<const uint16_t> ttl_offsets, const dns::Query& query,
                           const TtlRewrite& ttl, std::span<uint8_t> out, size_t max_size_bytes);

// Writes an upstream reply that is not (or not yet) cached for a client, the same way as a
// cached one (the client's ID, flags and name case, TTLs capped by `policy`, the upstream's
// OPT replaced by ours when the client sent EDNS, TC with no records when it does not fit
// max_size_bytes). `scratch` and `ttl_offsets` are caller-owned buffers reused across calls.
// Returns the size written, 0 when `reply` is not a whole reply to the query's question.
// --filter-AAAA on an upstream's reply, as dnsmasq's: the reply without its AAAA records, in
// every section (an ANY answer, glue in the additional section), re-encoded into *out.
// False, leaving *out alone, when the reply has none or does not parse (it is then used as
// it is: the rest of the path judges it). AAAA queries never get here: the filter answers
// them NODATA itself.
bool StripAaaa(std::span<const uint8_t> reply, std::vector<uint8_t>* out);

size_t WriteForwardedResponse(std::span<const uint8_t> reply, const dns::Query& query,
                              const CachePolicy& policy, std::vector<uint8_t>* scratch,
                              std::vector<uint16_t>* ttl_offsets, std::span<uint8_t> out,
                              size_t max_size_bytes);

}  // namespace kdns::frontend

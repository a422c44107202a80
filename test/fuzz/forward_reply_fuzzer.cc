// Arbitrary upstream replies through both servers' reply paths: the Forwarder's match
// (upstream::MatchReply), then frontend-cache's cache insert, its answer from the cache and
// its pass-through writer (WriteForwardedResponse), and kubedns's fitting of the same reply
// (server::FitReply, Truncation::kWholeRRsets). Never a crash, and never a poisoned cache:
//   - a reply that does not match the query sent is never inserted;
//   - whatever is inserted is served only for the question asked, as a message that parses,
//     with the client's ID and exact question (name case included), QR set, and within the
//     client's size limit (TC with no records when it does not fit);
//   - no other name, type or class ever hits the entry;
//   - kubedns's answer parses, has the client's ID and question and fits the limit;
//   - the 0x20 restore of the client's spelling leaves a reply that parsed parsing, to the
//     same names.
// Input: byte 0 picks the question type, the client's EDNS and DO bits and transport, and
// whether the reply's ID is forced to ours (so the fuzzer need not guess 16 bits); the rest
// is the upstream's reply.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/base/clock.h"
#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/server/forward_reply.h"
#include "common/upstream/dns0x20.h"
#include "common/upstream/wire.h"
#include "frontend-cache/cache.h"
#include "frontend-cache/cached_response.h"

namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

constexpr uint16_t kOurId = 0x5eed;
constexpr uint16_t kClientId = 0xc1e0;
constexpr kdns::dns::RrType kTypes[] = {kdns::dns::RrType::kA, kdns::dns::RrType::kAaaa,
                                        kdns::dns::RrType::kTxt, kdns::dns::RrType::kSrv};

using kdns::dns::testing::ParsedQuery;

// The client's query for www.Example.COM. (mixed case on purpose) and its parse.
ParsedQuery MakeClientQuery(kdns::dns::RrType type, bool edns, bool dnssec_ok) {
  kdns::dns::testing::QuerySpec spec("www.Example.COM.");
  spec.Type(type).Id(kClientId);
  if (edns) spec.Edns();
  if (edns && dnssec_ok) spec.DnssecOk();
  return spec.Parsed();
}

// A served answer is a whole, well-formed reply to exactly the client's question.
void CheckServed(std::span<const uint8_t> served, const kdns::dns::Query& query, size_t limit) {
  Check(served.size() <= limit);
  kdns::dns::Message message;
  Check(kdns::dns::ParseMessage(served, &message) == kdns::dns::ParseError::kOk);
  Check(message.header.qr);
  Check(message.header.id == kClientId);
  Check(message.questions.size() == 1);
  Check(message.questions[0].name.IdenticalTo(query.qname));
  Check(message.questions[0].type == query.qtype);
  Check(message.questions[0].cls == query.qclass);
  Check(message.edns.has_value() == query.edns.has_value());
}

// The weaker property for replies the Forwarder would have dropped as malformed (whose
// records may not parse): still the client's ID and exactly the client's question.
void CheckServedQuestion(std::span<const uint8_t> served, const ParsedQuery& client, size_t limit) {
  Check(served.size() <= limit);
  Check(served.size() >= client.query.question_end);
  Check(served[0] == (kClientId >> 8) && served[1] == (kClientId & 0xff));
  Check((served[2] & 0x80) != 0);
  Check(served[4] == 0 && served[5] == 1);
  Check(std::equal(client.bytes.begin() + kdns::dns::kHeaderSize,
                   client.bytes.begin() + static_cast<ptrdiff_t>(client.query.question_end),
                   served.begin() + kdns::dns::kHeaderSize));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t control = data[0];
  std::vector<uint8_t> reply(data + 1, data + size);
  if ((control & 0x40) && reply.size() >= 2) {
    reply[0] = kOurId >> 8;
    reply[1] = kOurId & 0xff;
  }
  const ParsedQuery client =
      MakeClientQuery(kTypes[control & 3], (control & 4) != 0, (control & 8) != 0);
  const bool tcp = (control & 0x10) != 0;
  const size_t limit = tcp ? kdns::dns::kMaxMessageSize
                           : (client.query.edns ? 1232 : kdns::dns::kMaxUdpSizeWithoutEdns);

  // 0x20 (common/upstream/dns0x20.h): putting the client's spelling back over a reply changes
  // the case of letters only, so a reply that parsed still parses, to the same names.
  {
    static const kdns::dns::Name sent = *kdns::dns::Name::FromText("wWW.ExamPLE.com.");
    std::vector<uint8_t> restored = reply;
    kdns::upstream::Restore0x20(restored, sent, client.query.qname);
    kdns::dns::Message before;
    kdns::dns::Message after;
    if (kdns::dns::ParseMessage(reply, &before, kdns::dns::TrailingData::kIgnore) ==
        kdns::dns::ParseError::kOk) {
      Check(kdns::dns::ParseMessage(restored, &after, kdns::dns::TrailingData::kIgnore) ==
            kdns::dns::ParseError::kOk);
      Check(after.questions.size() == before.questions.size());
      for (size_t i = 0; i < before.questions.size(); ++i) {
        Check(after.questions[i].name == before.questions[i].name);
      }
      Check(after.answers.size() == before.answers.size());
      for (size_t i = 0; i < before.answers.size(); ++i) {
        Check(after.answers[i].owner == before.answers[i].owner);
      }
    }
  }

  // What the Forwarder does with the bytes.
  const auto request = kdns::upstream::Request::FromQuery(
      client.query, tcp ? kdns::dns::Transport::kTcp : kdns::dns::Transport::kUdp,
      kdns::loop::SocketAddress());
  kdns::dns::Message parsed;
  size_t reply_end = reply.size();
  const kdns::upstream::Match match =
      kdns::upstream::MatchReply(reply, kOurId, request, &parsed, &reply_end);

  static kdns::ManualClock clock;
  kdns::frontend::CacheOptions options;
  options.capacity = 64;
  options.policy.neg_ttl_s = (control & 0x20) ? std::optional<uint32_t>(60) : std::nullopt;
  kdns::frontend::Cache cache(options, clock);
  const kdns::frontend::CacheKey key = kdns::frontend::CacheKey::FromQuery(client.query);
  static std::vector<uint8_t> out(kdns::dns::kMaxMessageSize);

  if (match != kdns::upstream::Match::kOk) {
    // The Forwarder drops it. Had it not, the cache must still never answer another
    // question with it (it does not re-check rdata the Forwarder's parse has checked).
    (void)cache.Insert(key, reply);
    kdns::frontend::LookupResult hit = cache.Lookup(key, client.query, out, limit);
    if (hit.status == kdns::frontend::LookupStatus::kHit) {
      CheckServedQuestion(std::span<const uint8_t>(out.data(), hit.size), client, limit);
    }
    return 0;
  }

  // The Forwarder passes on the message without what trailed its last record.
  reply.resize(reply_end);

  // Passed through to the client without caching.
  std::vector<uint8_t> scratch;
  std::vector<uint16_t> offsets;
  const size_t written = kdns::frontend::WriteForwardedResponse(reply, client.query, options.policy,
                                                                &scratch, &offsets, out, limit);
  if (written > 0) CheckServed(std::span<const uint8_t>(out.data(), written), client.query, limit);

  // kubedns's answer from the same reply: as received, or re-encoded and cut at an RRset.
  // Only what the Forwarder delivers as the answer: FORMERR, SERVFAIL, NOTIMP and REFUSED
  // (the only replies that may omit the question) make it try the next server instead.
  const kdns::dns::Rcode rcode = parsed.rcode();
  const bool failover = rcode == kdns::dns::Rcode::kFormErr ||
                        rcode == kdns::dns::Rcode::kServFail ||
                        rcode == kdns::dns::Rcode::kNotImp || rcode == kdns::dns::Rcode::kRefused;
  if (!failover) {
    kdns::upstream::Result result;
    result.outcome = kdns::upstream::ForwardOutcome::kAnswer;
    result.reply = reply;
    result.message = parsed;
    std::vector<uint8_t> reencoded;
    const kdns::server::Fitted fitted =
        kdns::server::FitReply(kdns::server::ReplyToFit::From(result), client.query, limit,
                               kdns::server::Truncation::kWholeRRsets, out, &reencoded);
    if (!fitted.bytes.empty()) {
      Check(fitted.bytes.size() <= limit);
      kdns::dns::Message message;
      Check(kdns::dns::ParseMessage(fitted.bytes, &message) == kdns::dns::ParseError::kOk);
      Check(message.header.id == kClientId);
      Check(message.questions.size() == 1 && message.questions[0].name == client.query.qname);
      Check(message.edns.has_value() == client.query.edns.has_value());
    }
  }

  const kdns::frontend::InsertOutcome inserted = cache.Insert(key, reply);
  kdns::frontend::LookupResult hit = cache.Lookup(key, client.query, out, limit);
  Check((hit.status == kdns::frontend::LookupStatus::kHit) ==
        (inserted.result == kdns::frontend::InsertResult::kInserted));
  if (hit.status == kdns::frontend::LookupStatus::kHit) {
    CheckServed(std::span<const uint8_t>(out.data(), hit.size), client.query, limit);
    // Later, with TTLs counted down, still well formed.
    clock.AdvanceMs(1500);
    hit = cache.Lookup(key, client.query, out, limit);
    if (hit.status == kdns::frontend::LookupStatus::kHit) {
      CheckServed(std::span<const uint8_t>(out.data(), hit.size), client.query, limit);
    }
  }
  // No other question ever hits the entry.
  for (kdns::dns::RrType other : kTypes) {
    if (other == client.query.qtype) continue;
    const ParsedQuery different = MakeClientQuery(other, client.query.edns.has_value(), false);
    Check(cache
              .Lookup(kdns::frontend::CacheKey::FromQuery(different.query), different.query, out,
                      limit)
              .status == kdns::frontend::LookupStatus::kMiss);
  }
  return 0;
}

// Helpers for frontend-cache's unit tests (header-only, not part of the library): client
// queries and upstream replies built with the codec, and the Cache on a manual clock that the
// cache_*_test.cc share, with the replies they insert. The cache and chaos tests live in this
// namespace, so each file names these helpers without importing them.
#pragma once

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "frontend-cache/cache.h"

namespace kdns::frontend::testing {

enum class Edns : uint8_t { kNone, kPlain, kDnssecOk };

// A client's query (dns::testing::QuerySpec) and its parse, in this suite's terms.
inline dns::testing::ParsedQuery MakeQuery(std::string_view name, dns::RrType type,
                                           uint16_t id = 0x1234, Edns edns = Edns::kNone,
                                           dns::RrClass cls = dns::RrClass::kIn) {
  dns::testing::QuerySpec spec(name);
  spec.Type(type).Class(cls).Id(id);
  if (edns != Edns::kNone) spec.Edns();
  if (edns == Edns::kDnssecOk) spec.DnssecOk();
  return spec.Parsed();
}

struct Reply {
  std::string qname;
  dns::RrType type = dns::RrType::kA;
  dns::Rcode rcode = dns::Rcode::kNoError;
  std::vector<std::string> answers;  // presentation form, as RR()
  std::vector<std::string> authorities;
  std::vector<std::string> additionals;
  bool edns = true;
  bool tc = false;
  bool ad = false;
};

inline std::vector<uint8_t> MakeReply(const Reply& reply) {
  dns::Message message;
  message.header.id = 0x9999;
  message.header.qr = true;
  message.header.rd = true;
  message.header.ra = true;
  message.header.tc = reply.tc;
  message.header.ad = reply.ad;
  message.header.rcode = reply.rcode;
  message.questions.push_back({dns::testing::N(reply.qname), reply.type, dns::RrClass::kIn});
  for (const auto& text : reply.answers) message.answers.push_back(dns::testing::RR(text));
  for (const auto& text : reply.authorities) message.authorities.push_back(dns::testing::RR(text));
  for (const auto& text : reply.additionals) message.additionals.push_back(dns::testing::RR(text));
  if (reply.edns) {
    dns::Edns edns;
    edns.udp_payload_size = 4096;
    edns.options = {0, 3, 0, 2, 'n', 's'};  // NSID "ns": must not reach clients from cache
    message.edns = edns;
  }
  std::vector<uint8_t> bytes;
  REQUIRE(dns::BuildMessage(message, dns::kMaxMessageSize, &bytes) == dns::BuildError::kOk);
  return bytes;
}

using dns::testing::Parse;

// The client's UDP size limit in the cache's lookups.
inline constexpr size_t kUdp = 512;

// A Cache on a manual clock, with inserts and lookups as the server makes them.
struct CacheFixture {
  explicit CacheFixture(CacheOptions options = CacheOptions()) : cache(options, clock) {}

  InsertOutcome Insert(const Reply& reply, Edns edns = Edns::kNone, bool cd = false) {
    auto query = MakeQuery(reply.qname, reply.type, 1, edns);
    query.query.header.cd = cd;
    return cache.Insert(CacheKey::FromQuery(query.query), MakeReply(reply));
  }
  // Looks `name` up as a client would and returns the parsed reply (or nullopt on a miss).
  std::optional<dns::Message> Get(std::string_view name, dns::RrType type = dns::RrType::kA,
                                  Edns edns = Edns::kNone, uint16_t id = 0x4242,
                                  LookupResult* result_out = nullptr, bool stale = false,
                                  bool cd = false) {
    auto query = MakeQuery(name, type, id, edns);
    query.query.header.cd = cd;
    CacheKey key = CacheKey::FromQuery(query.query);
    LookupResult result = stale ? cache.LookupStale(key, query.query, buffer, kUdp)
                                : cache.Lookup(key, query.query, buffer, kUdp);
    if (result_out != nullptr) *result_out = result;
    if (result.status == LookupStatus::kMiss) return std::nullopt;
    return Parse(std::span(buffer.data(), result.size));
  }

  ManualClock clock{1'000'000};
  Cache cache;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(65535);
};

// A NOERROR reply with `answers` (records in zone-file text).
inline Reply Answer(std::string name, std::vector<std::string> answers,
                    dns::RrType type = dns::RrType::kA) {
  Reply reply;
  reply.qname = std::move(name);
  reply.type = type;
  reply.answers = std::move(answers);
  return reply;
}

// NXDOMAIN, or NODATA with rcode NOERROR; without an SOA when soa_ttl is nullopt.
inline Reply Negative(std::string name, std::optional<uint32_t> soa_ttl, uint32_t minimum,
                      dns::Rcode rcode = dns::Rcode::kNxDomain,
                      dns::RrType type = dns::RrType::kA) {
  Reply reply;
  reply.qname = std::move(name);
  reply.type = type;
  reply.rcode = rcode;
  if (soa_ttl) {
    reply.authorities = {"example.com. " + std::to_string(*soa_ttl) +
                         " IN SOA ns.example.com. host.example.com. 1 7200 3600 86400 " +
                         std::to_string(minimum)};
  }
  return reply;
}

inline Reply Nxdomain(std::string name, uint32_t soa_ttl, uint32_t minimum) {
  return Negative(std::move(name), soa_ttl, minimum);
}

inline Reply NoData(std::string name, dns::RrType type) {
  return Negative(std::move(name), std::nullopt, 0, dns::Rcode::kNoError, type);
}

inline const Reply kWww = Answer("www.example.com.", {"www.example.com. 300 IN A 192.0.2.1",
                                                      "www.example.com. 300 IN A 192.0.2.2"});

// A cache of `capacity` entries in one shard, so that eviction order is the CLOCK's alone.
inline CacheOptions OneShard(size_t capacity) {
  CacheOptions options;
  options.capacity = capacity;
  options.shard_count = 1;
  return options;
}

// The answer for h<i>.example.com.
inline Reply Host(int i, uint32_t ttl = 300) {
  std::string name = "h" + std::to_string(i) + ".example.com.";
  return Answer(name, {name + " " + std::to_string(ttl) + " IN A 192.0.2.1"});
}

}  // namespace kdns::frontend::testing

// Tests of the Cache's lookups and TTLs (frontend-cache/cache.h): hits in the client's terms,
// expiry and the TTL bounds, what is not cached, DO and CD, truncation, stale answers and
// prefetch. Negatives, eviction, the bytes budget and threads have their own cache_*_test.cc.

#include "frontend-cache/cache.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "frontend-cache/options.h"
#include "frontend-cache/testing.h"
#include "test/unit/allocation_counter.h"

namespace kdns::frontend::testing {
namespace {

using dns::Rcode;
using dns::RrType;
using dns::testing::N;

TEST_CASE("A hit carries the client's ID and name case and the remaining TTL",
          "[frontend][cache]") {
  CacheFixture f;
  REQUIRE(f.Insert(kWww).result == InsertResult::kInserted);
  auto reply = f.Get("WwW.ExAmple.COM.", RrType::kA, Edns::kNone, 0x4242);
  REQUIRE(reply);
  CHECK(reply->header.id == 0x4242);
  CHECK(reply->header.qr);
  CHECK(reply->header.ra);
  CHECK_FALSE(reply->header.aa);
  CHECK_FALSE(reply->header.tc);
  CHECK(reply->questions[0].name.IdenticalTo(N("WwW.ExAmple.COM.")));
  REQUIRE(reply->answers.size() == 2);
  // The builder compressed the owners to the question, so they echo the client's case.
  CHECK(reply->answers[0].owner.IdenticalTo(N("WwW.ExAmple.COM.")));
  CHECK(reply->answers[0].ttl_s == 300);
  CHECK_FALSE(reply->edns);  // the upstream's OPT (and its NSID) is not passed on

  f.clock.AdvanceMs(10'500);
  reply = f.Get("www.example.com.");
  REQUIRE(reply);
  CHECK(reply->answers[0].ttl_s == 290);
  CHECK(reply->answers[1].ttl_s == 290);
  CHECK(f.cache.Stats().hits == 2);
}

TEST_CASE("An entry expires with its smallest answer TTL", "[frontend][cache]") {
  CacheFixture f;
  Reply reply = kWww;
  reply.answers = {"www.example.com. 300 IN CNAME web.example.com.",
                   "web.example.com. 60 IN A 192.0.2.1"};
  REQUIRE(f.Insert(reply).result == InsertResult::kInserted);
  f.clock.AdvanceMs(59'999);
  auto hit = f.Get("www.example.com.");
  REQUIRE(hit);
  CHECK(hit->answers[0].ttl_s == 241);
  CHECK(hit->answers[1].ttl_s == 1);
  f.clock.AdvanceMs(1);
  CHECK_FALSE(f.Get("www.example.com."));
  CHECK(f.cache.Stats().misses == 1);
}

TEST_CASE("TTLs are capped by --max-cache-ttl and raised by --min-cache-ttl", "[frontend][cache]") {
  SECTION("max") {
    CacheOptions options;
    options.policy.max_ttl_s = 60;
    CacheFixture f(options);
    REQUIRE(f.Insert(kWww).result == InsertResult::kInserted);
    CHECK(f.Get("www.example.com.")->answers[0].ttl_s == 60);
    f.clock.AdvanceMs(60'000);
    CHECK_FALSE(f.Get("www.example.com."));
  }
  SECTION("min") {
    CacheOptions options;
    options.policy.min_ttl_s = 100;
    CacheFixture f(options);
    Reply reply = kWww;
    reply.answers = {"www.example.com. 5 IN A 192.0.2.1"};
    REQUIRE(f.Insert(reply).result == InsertResult::kInserted);
    f.clock.AdvanceMs(50'000);
    auto hit = f.Get("www.example.com.");
    REQUIRE(hit);
    CHECK(hit->answers[0].ttl_s == 50);
  }
  SECTION("TTL 0 is not cached") {
    CacheFixture f;
    Reply reply = kWww;
    reply.answers = {"www.example.com. 0 IN A 192.0.2.1"};
    CHECK(f.Insert(reply).reason == Cacheability::kZeroTtl);
  }
}

TEST_CASE("SERVFAIL, other errors and truncated replies are not cached", "[frontend][cache]") {
  CacheFixture f;
  for (Rcode rcode : {Rcode::kServFail, Rcode::kRefused, Rcode::kFormErr, Rcode::kNotImp}) {
    Reply reply = kWww;
    reply.rcode = rcode;
    CHECK(f.Insert(reply).reason == Cacheability::kUncachedRcode);
  }
  Reply truncated = kWww;
  truncated.tc = true;
  CHECK(f.Insert(truncated).reason == Cacheability::kTruncated);
  CHECK(f.cache.Stats().size == 0);
  CHECK(f.cache.Stats().insertions == 0);
}

TEST_CASE("A reply to another question is not cached", "[frontend][cache]") {
  CacheFixture f;
  auto query = MakeQuery("other.example.com.", RrType::kA);
  CHECK(f.cache.Insert(CacheKey::FromQuery(query.query), MakeReply(kWww)).reason ==
        Cacheability::kQuestionMismatch);
  const std::vector<uint8_t> garbage = {1, 2, 3};
  CHECK(f.cache.Insert(CacheKey::FromQuery(query.query), garbage).reason ==
        Cacheability::kMalformed);
}

TEST_CASE("The DO bit keys entries separately and EDNS follows the client", "[frontend][cache]") {
  CacheFixture f;
  Reply signed_reply = kWww;
  signed_reply.ad = true;
  REQUIRE(f.Insert(signed_reply, Edns::kDnssecOk).result == InsertResult::kInserted);
  CHECK_FALSE(f.Get("www.example.com.", RrType::kA, Edns::kNone));
  CHECK_FALSE(f.Get("www.example.com.", RrType::kA, Edns::kPlain));
  auto reply = f.Get("www.example.com.", RrType::kA, Edns::kDnssecOk);
  REQUIRE(reply);
  REQUIRE(reply->edns);
  CHECK(reply->edns->dnssec_ok);
  CHECK(reply->edns->udp_payload_size == dns::kDefaultUdpPayloadSize);
  CHECK(reply->edns->options.empty());
  CHECK(reply->header.ad);

  REQUIRE(f.Insert(kWww, Edns::kNone).result == InsertResult::kInserted);
  reply = f.Get("www.example.com.", RrType::kA, Edns::kPlain);
  REQUIRE(reply);
  REQUIRE(reply->edns);
  CHECK_FALSE(reply->edns->dnssec_ok);
  reply = f.Get("www.example.com.", RrType::kA, Edns::kNone);
  REQUIRE(reply);
  CHECK_FALSE(reply->edns);
  CHECK(f.cache.Stats().size == 2);
}

TEST_CASE("A reply too big for the client's UDP limit is sent truncated", "[frontend][cache]") {
  CacheFixture f;
  Reply big = Answer("big.example.com.", {}, RrType::kAaaa);
  for (int i = 0; i < 40; ++i) {
    big.answers.push_back("big.example.com. 300 IN AAAA 2001:db8::" + std::to_string(i + 1));
  }
  REQUIRE(f.Insert(big).result == InsertResult::kInserted);
  auto query = MakeQuery("big.example.com.", RrType::kAaaa);
  CacheKey key = CacheKey::FromQuery(query.query);
  LookupResult result = f.cache.Lookup(key, query.query, f.buffer, kUdp);
  REQUIRE(result.status == LookupStatus::kHit);
  dns::Message reply = Parse(std::span(f.buffer.data(), result.size));
  CHECK(reply.header.tc);
  CHECK(reply.answers.empty());
  // Over TCP it fits.
  result = f.cache.Lookup(key, query.query, f.buffer, dns::kMaxMessageSize);
  reply = Parse(std::span(f.buffer.data(), result.size));
  CHECK_FALSE(reply.header.tc);
  CHECK(reply.answers.size() == 40);
}

TEST_CASE("An answer fetched with CD=1 never reaches a CD=0 client", "[frontend][cache]") {
  CacheFixture f;
  Reply unchecked = kWww;
  unchecked.answers = {"www.example.com. 300 IN A 192.0.2.66"};
  REQUIRE(f.Insert(unchecked, Edns::kNone, /*cd=*/true).result == InsertResult::kInserted);
  CHECK_FALSE(f.Get("www.example.com."));
  CHECK_FALSE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, nullptr, /*stale=*/true));
  auto reply = f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, nullptr, false, /*cd=*/true);
  REQUIRE(reply);
  CHECK(reply->header.cd);
  CHECK(reply->answers.size() == 1);  // the CD=1 answer

  REQUIRE(f.Insert(kWww).result == InsertResult::kInserted);
  reply = f.Get("www.example.com.");
  REQUIRE(reply);
  CHECK_FALSE(reply->header.cd);
  CHECK(reply->answers.size() == 2);  // the CD=0 answer
  CHECK(f.cache.Stats().size == 2);
}

TEST_CASE("TTLs are capped at an hour unless --max-cache-ttl says otherwise", "[frontend][cache]") {
  Reply reply = kWww;
  reply.answers = {"www.example.com. 86400 IN A 192.0.2.1"};
  SECTION("the default") {
    CacheFixture f(ToCacheOptions(Options()));
    REQUIRE(f.Insert(reply).result == InsertResult::kInserted);
    CHECK(f.Get("www.example.com.")->answers[0].ttl_s == kDefaultMaxCacheTtlS);
    f.clock.AdvanceMs(uint64_t{kDefaultMaxCacheTtlS} * 1000);
    CHECK_FALSE(f.Get("www.example.com."));
  }
  SECTION("--max-cache-ttl=0: no cap, as in dnsmasq") {
    Options flags;
    flags.max_cache_ttl_s = 0;
    CacheFixture f(ToCacheOptions(flags));
    REQUIRE(f.Insert(reply).result == InsertResult::kInserted);
    CHECK(f.Get("www.example.com.")->answers[0].ttl_s == 86400);
  }
}

TEST_CASE("Capacity 0 disables the cache", "[frontend][cache]") {
  CacheFixture f(OneShard(0));
  CHECK(f.Insert(kWww).result == InsertResult::kDisabled);
  CHECK_FALSE(f.Get("www.example.com."));
  CHECK(f.cache.Stats().capacity == 0);
  CHECK(f.cache.Flush() == 0);
}

TEST_CASE("Expired entries are served stale with TTL 30 within --stale-max", "[frontend][cache]") {
  CacheOptions options;
  options.stale_max_s = 3600;
  CacheFixture f(options);
  REQUIRE(f.Insert(Nxdomain("nope.example.com.", 60, 60)).result == InsertResult::kInserted);
  REQUIRE(f.Insert(kWww).result == InsertResult::kInserted);
  f.clock.AdvanceMs(400'000);
  CHECK_FALSE(f.Get("www.example.com."));
  LookupResult result;
  auto reply = f.Get("www.example.com.", RrType::kA, Edns::kNone, 7, &result, /*stale=*/true);
  REQUIRE(reply);
  CHECK(result.status == LookupStatus::kStale);
  CHECK(reply->header.id == 7);
  CHECK(reply->answers[0].ttl_s == kStaleTtlS);
  CHECK(reply->answers[1].ttl_s == kStaleTtlS);
  CHECK(
      f.Get("nope.example.com.", RrType::kA, Edns::kNone, 7, nullptr, true)->authorities[0].ttl_s ==
      kStaleTtlS);
  CHECK(f.cache.Stats().stale_hits == 2);

  f.clock.AdvanceMs(3600'000);
  CHECK_FALSE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 7, nullptr, true));
  CHECK(f.cache.Stats().size == 1);  // dropped when found past the stale window
}

TEST_CASE("--stale-max=0 serves nothing stale", "[frontend][cache]") {
  CacheOptions options;
  options.stale_max_s = 0;
  CacheFixture f(options);
  REQUIRE(f.Insert(kWww).result == InsertResult::kInserted);
  CHECK(f.Get("www.example.com.", RrType::kA, Edns::kNone, 7, nullptr, true));  // still fresh
  f.clock.AdvanceMs(300'000);
  CHECK_FALSE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 7, nullptr, true));
}

TEST_CASE("A popular entry near its expiry asks once for a prefetch", "[frontend][cache]") {
  CacheFixture f;
  Reply reply = kWww;
  reply.answers = {"www.example.com. 100 IN A 192.0.2.1"};
  REQUIRE(f.Insert(reply).result == InsertResult::kInserted);
  LookupResult result;
  REQUIRE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, &result));
  CHECK_FALSE(result.prefetch);  // fresh
  f.clock.AdvanceMs(85'000);
  REQUIRE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, &result));
  CHECK_FALSE(result.prefetch);  // 15% left
  f.clock.AdvanceMs(6'000);
  REQUIRE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, &result));
  CHECK(result.prefetch);  // 9% left, third hit
  REQUIRE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, &result));
  CHECK_FALSE(result.prefetch);  // asked already
  CHECK(f.cache.Stats().prefetches == 1);

  SECTION("not for an entry hit only once") {
    REQUIRE(f.Insert(reply).result == InsertResult::kInserted);
    f.clock.AdvanceMs(95'000);
    REQUIRE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, &result));
    CHECK_FALSE(result.prefetch);
    REQUIRE(f.Get("www.example.com.", RrType::kA, Edns::kNone, 1, &result));
    CHECK(result.prefetch);
  }
}

TEST_CASE("The shard count follows the capacity", "[frontend][cache]") {
  ManualClock clock;
  auto shards = [&](size_t capacity) {
    CacheOptions options;
    options.capacity = capacity;
    return Cache(options, clock).shard_count();
  };
  CHECK(shards(150) == 4);
  CHECK(shards(1000) == 16);
  CHECK(shards(100000) == 64);
  CHECK(shards(10) == 1);
}

TEST_CASE("A cache hit allocates nothing", "[frontend][cache]") {
  CacheFixture f;
  REQUIRE(f.Insert(kWww, Edns::kPlain).result == InsertResult::kInserted);
  auto query = MakeQuery("WWW.example.com.", RrType::kA, 0x77, Edns::kPlain);
  std::vector<uint8_t> out(kUdp);
  const size_t before = kdns::testing::AllocationCount();
  CacheKey key = CacheKey::FromQuery(query.query);
  LookupResult result = f.cache.Lookup(key, query.query, out, kUdp);
  const size_t after = kdns::testing::AllocationCount();
  REQUIRE(result.status == LookupStatus::kHit);
  CHECK(after == before);
  // The counter works.
  auto* vector = new std::vector<int>(100);
  CHECK(kdns::testing::AllocationCount() > after);
  delete vector;
}

}  // namespace
}  // namespace kdns::frontend::testing

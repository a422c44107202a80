// Tests of the Cache's negative answers: NXDOMAIN and NODATA TTLs from the SOA and --neg-ttl,
// --no-negcache and the exact zones, and dropping them (Flush, FlushDomain, DropNegative).

#include <catch2/catch.hpp>

#include "frontend-cache/cache.h"
#include "frontend-cache/testing.h"

namespace kdns::frontend::testing {
namespace {

using dns::Rcode;
using dns::RrType;
using dns::testing::N;

TEST_CASE("NXDOMAIN is cached for min(SOA TTL, SOA MINIMUM)", "[frontend][cache]") {
  CacheFixture f;
  REQUIRE(f.Insert(Nxdomain("nope.example.com.", 3600, 60)).result == InsertResult::kInserted);
  LookupResult result;
  auto reply = f.Get("nope.example.com.", RrType::kA, Edns::kNone, 1, &result);
  REQUIRE(reply);
  CHECK(result.negative);
  CHECK(reply->header.rcode == Rcode::kNxDomain);
  REQUIRE(reply->authorities.size() == 1);
  CHECK(reply->authorities[0].ttl_s == 60);  // RFC 2308 §5: the SOA carries the negative TTL
  f.clock.AdvanceMs(30'000);
  CHECK(f.Get("nope.example.com.")->authorities[0].ttl_s == 30);
  f.clock.AdvanceMs(30'000);
  CHECK_FALSE(f.Get("nope.example.com."));

  SECTION("the SOA's own TTL when it is smaller") {
    REQUIRE(f.Insert(Nxdomain("nope.example.com.", 10, 60)).result == InsertResult::kInserted);
    CHECK(f.Get("nope.example.com.")->authorities[0].ttl_s == 10);
  }
}

TEST_CASE("--neg-ttl caps the negative TTL and is used without an SOA", "[frontend][cache]") {
  CacheOptions options;
  options.policy.neg_ttl_s = 20;
  CacheFixture f(options);
  REQUIRE(f.Insert(Nxdomain("nope.example.com.", 3600, 600)).result == InsertResult::kInserted);
  CHECK(f.Get("nope.example.com.")->authorities[0].ttl_s == 20);
  f.clock.AdvanceMs(20'000);
  CHECK_FALSE(f.Get("nope.example.com."));

  Reply nodata = NoData("www.example.com.", RrType::kAaaa);
  REQUIRE(f.Insert(nodata).result == InsertResult::kInserted);
  auto reply = f.Get("www.example.com.", RrType::kAaaa);
  REQUIRE(reply);
  CHECK(reply->header.rcode == Rcode::kNoError);
  CHECK(reply->answers.empty());
  f.clock.AdvanceMs(20'000);
  CHECK_FALSE(f.Get("www.example.com.", RrType::kAaaa));
}

TEST_CASE("A negative answer without SOA or --neg-ttl is not cached", "[frontend][cache]") {
  CacheFixture f;
  CHECK(f.Insert(NoData("www.example.com.", RrType::kAaaa)).reason == Cacheability::kZeroTtl);
  CHECK(f.Insert(Negative("x.example.com.", std::nullopt, 0)).reason == Cacheability::kZeroTtl);
}

TEST_CASE("--no-negcache caches positive answers only", "[frontend][cache]") {
  CacheOptions options;
  options.policy.negative_caching = false;
  CacheFixture f(options);
  CHECK(f.Insert(Nxdomain("nope.example.com.", 3600, 60)).reason ==
        Cacheability::kNegativeDisabled);
  CHECK(f.Insert(kWww).result == InsertResult::kInserted);
  CHECK(f.cache.Stats().size == 1);
}

TEST_CASE("--no-negcache still caches the negative answers of the exact zones",
          "[frontend][cache]") {
  CacheOptions options;
  options.policy.negative_caching = false;
  options.policy.exact_negative_zones = {N("example.com.")};  // --serial-zones
  CacheFixture f(options);
  CHECK(f.Insert(Nxdomain("nope.Example.com.", 3600, 60)).result == InsertResult::kInserted);
  CHECK(f.Insert(Nxdomain("nope.example.org.", 3600, 60)).reason ==
        Cacheability::kNegativeDisabled);
  CHECK(f.cache.negatives() == 1);
}

TEST_CASE("Flush drops everything and FlushDomain a subtree", "[frontend][cache]") {
  CacheFixture f;
  REQUIRE(f.Insert(kWww).result == InsertResult::kInserted);
  REQUIRE(f.Insert(Host(1)).result == InsertResult::kInserted);
  REQUIRE(f.Insert(Answer("example.org.", {"example.org. 300 IN A 192.0.2.9"})).result ==
          InsertResult::kInserted);
  CHECK(f.cache.FlushDomain(N("Example.COM.")) == 2);
  CHECK_FALSE(f.Get("www.example.com."));
  CHECK(f.Get("example.org."));
  CHECK(f.cache.Flush() == 1);
  CHECK(f.cache.Stats().size == 0);
  CHECK(f.cache.Stats().evictions == 0);
}

TEST_CASE("DropNegative drops a zone's NXDOMAIN and NODATA entries and keeps the rest",
          "[frontend][cache]") {
  CacheFixture f;
  CHECK(f.cache.negatives() == 0);
  CHECK(f.cache.DropNegative(N("example.com.")) == 0);
  REQUIRE(f.Insert(kWww).result == InsertResult::kInserted);
  REQUIRE(f.Insert(Nxdomain("gone.example.com.", 60, 60)).result == InsertResult::kInserted);
  REQUIRE(f.Insert(Negative("www.example.com.", 60, 60, Rcode::kNoError, RrType::kAaaa)).result ==
          InsertResult::kInserted);
  REQUIRE(f.Insert(Nxdomain("gone.example.org.", 60, 60)).result == InsertResult::kInserted);
  CHECK(f.cache.negatives() == 3);

  CHECK(f.cache.DropNegative(N("Example.COM.")) == 2);
  CHECK(f.cache.negatives() == 1);
  CHECK_FALSE(f.Get("gone.example.com."));
  CHECK_FALSE(f.Get("www.example.com.", RrType::kAaaa));
  CHECK(f.Get("www.example.com."));   // positive: keeps its TTL
  CHECK(f.Get("gone.example.org."));  // another zone
  CHECK(f.cache.Stats().evictions == 0);

  SECTION("a negative entry replaced by a positive one is no longer counted") {
    REQUIRE(
        f.Insert(Answer("gone.example.org.", {"gone.example.org. 300 IN A 192.0.2.3"})).result ==
        InsertResult::kInserted);
    CHECK(f.cache.negatives() == 0);
  }
  SECTION("a flush forgets the count too") {
    CHECK(f.cache.Flush() == 2);
    CHECK(f.cache.negatives() == 0);
  }
}

}  // namespace
}  // namespace kdns::frontend::testing

#include "frontend-cache/zone_serials.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "common/dns/builder.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;

// Caches a reply to `name` A: NXDOMAIN with the SOA of `zone`, or one A record.
void Put(Cache& cache, const std::string& name, const std::string& zone, bool negative) {
  const dns::testing::ParsedQuery asked =
      dns::testing::QuerySpec(name).Id(0).Recursion(false).Parsed();
  const dns::Query& query = asked.query;
  std::vector<uint8_t> buffer(512);
  dns::MessageBuilder reply(buffer);
  REQUIRE(reply.StartResponse(query) == dns::BuildError::kOk);
  if (negative) {
    reply.header().rcode = dns::Rcode::kNxDomain;
    REQUIRE(reply.AddRecord(dns::Section::kAuthority,
                            dns::testing::RR(zone + " 60 IN SOA ns.dns." + zone + " hostmaster." +
                                             zone + " 7 28800 7200 604800 60")) ==
            dns::BuildError::kOk);
  } else {
    REQUIRE(reply.AddRecord(dns::Section::kAnswer, dns::testing::RR(name + " 30 IN A 10.96.0.9")) ==
            dns::BuildError::kOk);
  }
  REQUIRE(cache.Insert(CacheKey::FromQuery(query), reply.Finish()).result ==
          InsertResult::kInserted);
}

TEST_CASE("a zone's negatives go when its serial changes, or is first seen, and only then",
          "[frontend][zone_serials]") {
  ManualClock clock{1'000'000};
  Cache cache(CacheOptions{}, clock);
  ZoneSerials serials(cache, {N("cluster.local.")});
  CHECK(serials.ZonesToPoll().empty());  // nothing negative: nothing to ask

  Put(cache, "web.ns.svc.cluster.local.", "cluster.local.", false);
  CHECK(serials.ZonesToPoll().empty());  // positive answers need no poll
  Put(cache, "new.ns.svc.cluster.local.", "cluster.local.", true);
  Put(cache, "gone.example.org.", "example.org.", true);
  REQUIRE(serials.ZonesToPoll().size() == 1);

  // A first serial cannot vouch for negatives cached before it was seen.
  CHECK(serials.SerialSeen(N("cluster.local."), 1001) == 1);
  CHECK(serials.serial_changes() == 1);
  Put(cache, "new.ns.svc.cluster.local.", "cluster.local.", true);
  CHECK(serials.SerialSeen(N("cluster.local."), 1001) == 0);  // unchanged: kept
  CHECK(serials.SerialSeen(N("cluster.local."), 1002) == 1);  // changed: dropped
  CHECK(serials.serial_changes() == 2);
  CHECK(serials.dropped() == 2);
  CHECK(cache.negatives() == 1);                         // example.org.'s, not a polled zone
  CHECK(serials.SerialSeen(N("other.local."), 5) == 0);  // not a --serial-zones zone

  SECTION("a NOTIFY drops at once, for any zone") {
    CHECK(serials.Notified(N("example.org.")) == 1);
    CHECK(serials.notifies() == 1);
    CHECK(cache.negatives() == 0);
    CHECK(serials.ZonesToPoll().empty());
    CHECK(cache.Stats().size == 1);  // the positive answer stays
  }
}

}  // namespace
}  // namespace kdns::frontend

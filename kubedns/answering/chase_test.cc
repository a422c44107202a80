#include "kubedns/answering/chase.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/testing.h"
#include "common/server/forward_reply_testing.h"
#include "common/upstream/forwarder.h"

namespace kdns::kubedns {

using dns::testing::N;
using dns::testing::RR;

TEST_CASE("a chase appends the upstream's answer to the CNAME chain", "[kubedns][forward]") {
  dns::Message partial;
  partial.header.qr = true;
  partial.header.aa = true;
  partial.questions.push_back({N("ext.default.svc.cluster.local."), dns::RrType::kA});
  partial.answers.push_back(RR("ext.default.svc.cluster.local. 30 IN CNAME www.example.com."));
  const dns::Name target = N("www.example.com.");
  dns::Name next;
  SECTION("the records asked for: done") {
    auto reply =
        server::testing::UpstreamReply("www.example.com.", dns::RrType::kA,
                                       {RR("www.example.com. 60 IN CNAME cdn.example.net."),
                                        RR("cdn.example.net. 20 IN A 192.0.2.7")},
                                       true);
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) == ChaseStep::kDone);
    CHECK(partial.answers.size() == 3);
    CHECK(partial.rcode() == dns::Rcode::kNoError);
    CHECK(partial.authorities.empty());
  }
  SECTION("NXDOMAIN describes the last name and keeps its SOA") {
    auto reply = server::testing::UpstreamReply(
        "www.example.com.", dns::RrType::kA, {}, true, dns::Rcode::kNxDomain,
        {RR("example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 "
            "60"),
         RR("example.com. 300 IN NS ns.example.com.")});
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) == ChaseStep::kDone);
    CHECK(partial.rcode() == dns::Rcode::kNxDomain);
    CHECK(partial.answers.size() == 1);
    REQUIRE(partial.authorities.size() == 1);
    CHECK(partial.authorities[0].type == dns::RrType::kSoa);
  }
  SECTION("NODATA keeps the SOA too") {
    auto reply = server::testing::UpstreamReply(
        "www.example.com.", dns::RrType::kA, {}, true, dns::Rcode::kNoError,
        {RR("example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 "
            "60")});
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) == ChaseStep::kDone);
    CHECK(partial.rcode() == dns::Rcode::kNoError);
    CHECK(partial.authorities.size() == 1);
  }
  SECTION("an authoritative server's CNAME out of its zone is followed") {
    auto reply = server::testing::UpstreamReply(
        "www.example.com.", dns::RrType::kA,
        {RR("www.example.com. 60 IN CNAME elsewhere.example.org.")}, true);
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) ==
          ChaseStep::kFollow);
    CHECK(next == N("elsewhere.example.org."));
    CHECK(CountCnames(partial) == 2);
  }
  SECTION("an rcode that cannot end a chain fails it") {
    auto reply = server::testing::UpstreamReply("www.example.com.", dns::RrType::kA, {}, true,
                                                dns::Rcode::kYxDomain);
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) ==
          ChaseStep::kFailed);
  }
}

}  // namespace kdns::kubedns

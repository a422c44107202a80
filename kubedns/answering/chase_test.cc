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

// What a reply may hold beyond the chain, all of which must stay out of our answer
// (RFC 5452 §6): put the old copy-every-answer loop back in AppendChase and these fail.
TEST_CASE("a chase keeps only the records on the chain from its target", "[kubedns][forward]") {
  dns::Message partial;
  partial.header.qr = true;
  partial.questions.push_back({N("ext.default.svc.cluster.local."), dns::RrType::kA});
  partial.answers.push_back(RR("ext.default.svc.cluster.local. 30 IN CNAME www.example.com."));
  const dns::Name target = N("www.example.com.");
  dns::Name next;
  auto owners = [&] {
    std::vector<std::string> texts;
    for (const auto& record : partial.answers) {
      texts.push_back(record.owner.ToText() + " " + dns::RrTypeToText(record.type));
    }
    return texts;
  };
  SECTION("another owner's records, an unrelated A and a CNAME off the chain") {
    auto reply = server::testing::UpstreamReply(
        "www.example.com.", dns::RrType::kA,
        {RR("bank.example. 600 IN A 203.0.113.66"),
         RR("www.example.com. 60 IN CNAME cdn.example.net."),
         RR("kubernetes.default.svc.cluster.local. 600 IN A 203.0.113.66"),
         RR("other.example.org. 60 IN CNAME bank.example."),
         RR("cdn.example.net. 20 IN A 192.0.2.7"), RR("bank.example. 600 IN AAAA 2001:db8::66")},
        true);
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) == ChaseStep::kDone);
    CHECK((owners() == std::vector<std::string>{"ext.default.svc.cluster.local. CNAME",
                                                "www.example.com. CNAME", "cdn.example.net. A"}));
  }
  SECTION("a second CNAME at a name does not continue the chain") {
    auto reply = server::testing::UpstreamReply(
        "www.example.com.", dns::RrType::kA,
        {RR("www.example.com. 60 IN CNAME cdn.example.net."),
         RR("www.example.com. 60 IN CNAME evil.example."), RR("evil.example. 60 IN A 203.0.113.66"),
         RR("cdn.example.net. 20 IN A 192.0.2.7")},
        true);
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) == ChaseStep::kDone);
    CHECK((owners() == std::vector<std::string>{"ext.default.svc.cluster.local. CNAME",
                                                "www.example.com. CNAME", "cdn.example.net. A"}));
  }
  SECTION("records of the wrong type at the end are not an answer") {
    auto reply = server::testing::UpstreamReply(
        "www.example.com.", dns::RrType::kA,
        {RR("www.example.com. 60 IN AAAA 2001:db8::1"), RR("elsewhere. 60 IN A 203.0.113.66")},
        true, dns::Rcode::kNoError,
        {RR("example.com. 300 IN SOA ns.example.com. h.example.com. 1 2 3 4 60")});
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) == ChaseStep::kDone);
    CHECK(partial.answers.size() == 1);
    CHECK(partial.authorities.size() == 1);
  }
  SECTION("an SOA for a zone above another name says nothing about the chain") {
    auto reply = server::testing::UpstreamReply(
        "www.example.com.", dns::RrType::kA, {}, true, dns::Rcode::kNxDomain,
        {RR("evil.example. 300 IN SOA ns.evil.example. h.evil.example. 1 2 3 4 86400"),
         RR("com. 300 IN SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 2 3 4 60")});
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) == ChaseStep::kDone);
    REQUIRE(partial.authorities.size() == 1);
    CHECK(partial.authorities[0].owner == N("com."));
  }
  SECTION("a CNAME loop fails the chase instead of answering it") {
    auto reply = server::testing::UpstreamReply("www.example.com.", dns::RrType::kA,
                                                {RR("www.example.com. 60 IN CNAME a.example.net."),
                                                 RR("a.example.net. 60 IN CNAME www.example.com.")},
                                                true);
    CHECK(AppendChase(reply.message, target, dns::RrType::kA, &partial, &next) ==
          ChaseStep::kFailed);
  }
}

TEST_CASE("a chain follows CNAMEs in order and takes the RRsets at its end", "[kubedns][forward]") {
  const std::vector<dns::ResourceRecord> answers = {
      RR("c.example. 60 IN A 192.0.2.3"),      RR("b.example. 60 IN CNAME c.example."),
      RR("a.example. 60 IN CNAME b.example."), RR("c.example. 60 IN A 192.0.2.4"),
      RR("c.example. 60 IN AAAA 2001:db8::3"), RR("x.example. 60 IN A 192.0.2.9")};
  Chain chain = FollowChain(answers, N("A.example."), dns::RrType::kA);
  CHECK(chain.answered);
  CHECK_FALSE(chain.loop);
  CHECK(chain.end == N("c.example."));
  REQUIRE(chain.records.size() == 4);
  CHECK(chain.records[0] == answers[2]);
  CHECK(chain.records[1] == answers[1]);
  CHECK(chain.records[2] == answers[0]);
  CHECK(chain.records[3] == answers[3]);
  // ANY takes every type at the first name that has records; CNAME stops at the CNAME.
  CHECK(FollowChain(answers, N("c.example."), dns::RrType::kAny).records.size() == 3);
  CHECK(FollowChain(answers, N("a.example."), dns::RrType::kCname).records.size() == 1);
  // A name the answer does not mention: nothing.
  chain = FollowChain(answers, N("none.example."), dns::RrType::kA);
  CHECK_FALSE(chain.answered);
  CHECK(chain.records.empty());
}

}  // namespace kdns::kubedns

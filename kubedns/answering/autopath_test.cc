#include "kubedns/answering/autopath.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/testing.h"
#include "test/support/fake_dns_server.h"

namespace kdns::kubedns {
namespace {

using dns::RrType;
using dns::testing::N;

std::vector<std::string> Texts(const std::vector<dns::Name>& names) {
  std::vector<std::string> texts;
  texts.reserve(names.size());
  for (const auto& name : names) texts.push_back(name.ToText());
  return texts;
}

std::string PrefixOf(const Autopath& autopath, const std::string& qname) {
  std::optional<dns::Name> prefix = autopath.Prefix(N(qname));
  return prefix ? prefix->ToText() : "none";
}

dns::ResourceRecord Record(const std::string& owner, uint32_t ttl_s, dns::Rdata rdata,
                           RrType type) {
  return {N(owner), type, dns::RrClass::kIn, ttl_s, std::move(rdata)};
}

dns::ResourceRecord Soa(const std::string& zone, uint32_t ttl_s, uint32_t minimum_s) {
  dns::RdataSoa soa;
  soa.mname = N("ns." + zone);
  soa.rname = N("hostmaster." + zone);
  soa.minimum_s = minimum_s;
  return Record(zone, ttl_s, soa, RrType::kSoa);
}

dns::Query ClientQuery(const std::string& qname, RrType qtype, bool edns) {
  dns::Query query;
  query.header.id = 0x1234;
  query.header.rd = true;
  query.qname = N(qname);
  query.qtype = qtype;
  if (edns) query.edns = dns::EdnsView{};
  return query;
}

}  // namespace

TEST_CASE("autopath walks svc.Z, Z, the node's domains in order, then the root",
          "[kubedns][autopath]") {
  // Domains in the cluster domain and repeats are dropped: the walk has them already.
  Autopath autopath(N("Cluster.Local."),
                    {N("node.example."), N("svc.cluster.local."), N("cluster.local."),
                     N("Node.Example."), N("c.project.internal.")});
  CHECK((Texts(autopath.suffixes()) == std::vector<std::string>{"svc.cluster.local.",
                                                                "cluster.local.", "node.example.",
                                                                "c.project.internal.", "."}));
  CHECK((Texts(Autopath(N("cluster.local."), {}).suffixes()) ==
         std::vector<std::string>{"svc.cluster.local.", "cluster.local.", "."}));
}

TEST_CASE("autopath takes only N.<namespace>.svc.Z with at least one label in N",
          "[kubedns][autopath]") {
  Autopath autopath(N("cluster.local."), {});
  CHECK(PrefixOf(autopath, "www.example.com.default.svc.cluster.local.") == "www.example.com.");
  CHECK(PrefixOf(autopath, "web.other.default.svc.cluster.local.") == "web.other.");
  CHECK(PrefixOf(autopath, "Foo.My-NS.SVC.cluster.local.") == "foo.");
  CHECK(PrefixOf(autopath, "foo.0ns9.svc.cluster.local.") == "foo.");
  // No N, the zone's own names, pods, reverse zones, names outside Z.
  CHECK(PrefixOf(autopath, "default.svc.cluster.local.") == "none");
  CHECK(PrefixOf(autopath, "svc.cluster.local.") == "none");
  CHECK(PrefixOf(autopath, "x.10-0-0-1.default.pod.cluster.local.") == "none");
  CHECK(PrefixOf(autopath, "x.default.pod.cluster.local.") == "none");
  CHECK(PrefixOf(autopath, "x.1.0.96.10.in-addr.arpa.") == "none");
  CHECK(PrefixOf(autopath, "x.default.svc.example.com.") == "none");
  // A trailing label that cannot be a namespace.
  CHECK(PrefixOf(autopath, "x.under_score.svc.cluster.local.") == "none");
  CHECK(PrefixOf(autopath, "x.-dash.svc.cluster.local.") == "none");
  CHECK(PrefixOf(autopath, "x.dash-.svc.cluster.local.") == "none");
  CHECK(PrefixOf(autopath, "x.a\\.b.svc.cluster.local.") == "none");
  CHECK(IsNamespaceLabel(std::string(63, 'a')));
  CHECK_FALSE(IsNamespaceLabel(""));
}

TEST_CASE(
    "an autopath answer is a CNAME to the candidate plus its answer, TTLs at most the "
    "shortest",
    "[kubedns][autopath]") {
  const dns::Query query = ClientQuery("WWW.example.com.default.svc.cluster.local.", RrType::kA,
                                       /*edns=*/true);
  dns::Message reply;
  reply.answers.push_back(
      Record("www.example.com.", 300, dns::RdataCname{N("edge.example.net.")}, RrType::kCname));
  reply.answers.push_back(Record("edge.example.net.", 20, testing::A("192.0.2.7"), RrType::kA));
  reply.authorities.push_back(
      Record("example.net.", 900, dns::RdataNs{N("ns.example.net.")}, RrType::kNs));

  SECTION("an upstream's answer: its chain kept, not authoritative") {
    dns::Message answer = ComposeAutopathAnswer(query, N("www.example.com."), reply,
                                                AutopathSource::kUpstream, /*max_ttl_s=*/30);
    CHECK(answer.header.id == 0x1234);
    CHECK(answer.header.qr);
    CHECK(answer.header.rd);
    CHECK(answer.header.ra);
    CHECK_FALSE(answer.header.aa);
    CHECK(answer.rcode() == dns::Rcode::kNoError);
    REQUIRE(answer.questions.size() == 1);
    CHECK(answer.questions[0].name.IdenticalTo(N("WWW.example.com.default.svc.cluster.local.")));
    REQUIRE(answer.answers.size() == 3);
    CHECK(answer.answers[0].owner.IdenticalTo(query.qname));
    CHECK(answer.answers[0].rdata == dns::Rdata{dns::RdataCname{N("www.example.com.")}});
    CHECK(answer.answers[1] ==
          Record("www.example.com.", 20, dns::RdataCname{N("edge.example.net.")}, RrType::kCname));
    CHECK(answer.answers[2].rdata == dns::Rdata{testing::A("192.0.2.7")});
    for (const auto& record : answer.answers) CHECK(record.ttl_s == 20);
    CHECK(answer.authorities.empty());  // a positive answer needs no authority
    CHECK(answer.edns.has_value());
  }
  SECTION("our records: authoritative, and never longer than our TTL") {
    dns::Message answer = ComposeAutopathAnswer(query, N("www.example.com."), reply,
                                                AutopathSource::kOurs, /*max_ttl_s=*/5);
    CHECK(answer.header.aa);
    for (const auto& record : answer.answers) CHECK(record.ttl_s == 5);
  }
  SECTION("no OPT for a client that sent none") {
    dns::Message answer =
        ComposeAutopathAnswer(ClientQuery("x.default.svc.cluster.local.", RrType::kA, false),
                              N("x."), reply, AutopathSource::kUpstream, 30);
    CHECK_FALSE(answer.edns.has_value());
  }
}

TEST_CASE("an autopath answer for a NODATA candidate keeps its SOA and its negative TTL",
          "[kubedns][autopath]") {
  const dns::Query query = ClientQuery("host.default.svc.cluster.local.", RrType::kAaaa, true);
  dns::Message reply;
  reply.authorities.push_back(Soa("node.example.", 3600, 45));
  dns::Message answer =
      ComposeAutopathAnswer(query, N("host.node.example."), reply, AutopathSource::kUpstream, 600);
  CHECK(answer.rcode() == dns::Rcode::kNoError);
  REQUIRE(answer.answers.size() == 1);
  CHECK(answer.answers[0].type == RrType::kCname);
  CHECK(answer.answers[0].ttl_s == 45);  // RFC 2308 §5: min(SOA TTL, MINIMUM)
  REQUIRE(answer.authorities.size() == 1);
  CHECK(answer.authorities[0].type == RrType::kSoa);
  CHECK(answer.authorities[0].ttl_s == 45);
}

// An upstream's answer for the candidate with records off its chain: put the old
// copy-every-answer loop back in ComposeAutopathAnswer and this fails.
TEST_CASE("an autopath answer keeps only the candidate's chain from an upstream",
          "[kubedns][autopath]") {
  const dns::Query query = ClientQuery("www.example.com.default.svc.cluster.local.", RrType::kA,
                                       /*edns=*/false);
  dns::Message reply;
  reply.answers.push_back(
      Record("kubernetes.default.svc.cluster.local.", 600, testing::A("203.0.113.66"), RrType::kA));
  reply.answers.push_back(
      Record("www.example.com.", 300, dns::RdataCname{N("edge.example.net.")}, RrType::kCname));
  reply.answers.push_back(
      Record("www.example.com.", 300, dns::RdataCname{N("evil.example.")}, RrType::kCname));
  reply.answers.push_back(Record("evil.example.", 600, testing::A("203.0.113.66"), RrType::kA));
  reply.answers.push_back(Record("edge.example.net.", 20, testing::A("192.0.2.7"), RrType::kA));
  reply.additionals.push_back(
      Record("ns.evil.example.", 600, testing::A("203.0.113.66"), RrType::kA));

  SECTION("from an upstream: the chain only, no additionals") {
    dns::Message answer = ComposeAutopathAnswer(query, N("www.example.com."), reply,
                                                AutopathSource::kUpstream, /*max_ttl_s=*/30);
    REQUIRE(answer.answers.size() == 3);
    CHECK(answer.answers[0].owner == query.qname);
    CHECK(answer.answers[1].rdata == dns::Rdata{dns::RdataCname{N("edge.example.net.")}});
    CHECK(answer.answers[2].owner == N("edge.example.net."));
    CHECK(answer.additionals.empty());
    for (const auto& record : answer.answers) CHECK(record.ttl_s == 20);  // not the junk's
  }
  SECTION("a NODATA's SOA only when it is for the chain's last name") {
    dns::Message nodata;
    nodata.authorities.push_back(Soa("evil.example.", 3600, 86400));
    nodata.authorities.push_back(Soa("example.com.", 3600, 45));
    dns::Message answer = ComposeAutopathAnswer(query, N("www.example.com."), nodata,
                                                AutopathSource::kUpstream, /*max_ttl_s=*/600);
    REQUIRE(answer.authorities.size() == 1);
    CHECK(answer.authorities[0].owner == N("example.com."));
  }
}

}  // namespace kdns::kubedns

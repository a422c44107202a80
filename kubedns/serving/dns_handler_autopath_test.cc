// DnsHandler's autopath walk (dns_handler.h, autopath.h): a handler on the test's loop, the
// records of a small cluster, and one scripted upstream for every name outside it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/testing.h"
#include "common/k8s/decode.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/text_parser.h"
#include "common/server/loop_server.h"
#include "common/server/server_test_util.h"
#include "kubedns/answering/autopath.h"
#include "kubedns/serving/dns_handler.h"
#include "kubedns/serving/dns_handler_testing.h"
#include "test/support/fake_dns_server.h"

namespace kdns::kubedns {

using dns::RrType;
using dns::testing::N;
using dns::testing::QuerySpec;
using namespace kubedns::testing;
using loop::testing::RunUntil;
using server::testing::RunUntilReply;

namespace {

std::shared_ptr<const Snapshot> ClusterSnapshot() {
  return SyncedRecords({R"({"metadata":{"name":"kubernetes","namespace":"default"},
                            "spec":{"clusterIP":"10.96.0.1","clusterIPs":["10.96.0.1"]}})",
                        R"({"metadata":{"name":"web","namespace":"other"},
                            "spec":{"clusterIP":"10.96.0.20","clusterIPs":["10.96.0.20"]}})",
                        R"({"metadata":{"name":"ext","namespace":"other"},
                            "spec":{"type":"ExternalName","externalName":"www.example.com"}})"});
}

// The world outside: www.example.com A (TTL 300), alias.example.com CNAME (TTL 600) to
// www.example.com, host.node.example NODATA (SOA TTL 3600, MINIMUM 45), slow.* never
// answered, everything else NXDOMAIN with the root's SOA.
kdns::testing::Replies World(const kdns::testing::ReceivedQuery& received) {
  if (!received.parsed || received.message.questions.empty()) return {};
  const dns::Question& question = received.message.questions[0];
  const std::string name = question.name.Lowercased().ToText();
  if (name.rfind("slow.", 0) == 0) return {};
  dns::Message reply = kdns::testing::ReplyTo(received.message);
  auto a_record = [&](const std::string& owner) {
    reply.answers.push_back(
        {N(owner), RrType::kA, dns::RrClass::kIn, 300, kdns::testing::A("192.0.2.80")});
  };
  if (name == "www.example.com.") {
    if (question.type == RrType::kA) a_record(name);
  } else if (name == "alias.example.com.") {
    reply.answers.push_back({question.name, RrType::kCname, dns::RrClass::kIn, 600,
                             dns::RdataCname{N("www.example.com.")}});
    if (question.type == RrType::kA) a_record("www.example.com.");
  } else if (name == "host.node.example.") {
    dns::RdataSoa soa;
    soa.minimum_s = 45;
    reply.authorities.push_back({N("node.example."), RrType::kSoa, dns::RrClass::kIn, 3600, soa});
  } else {
    reply.header.rcode = dns::Rcode::kNxDomain;
    dns::RdataSoa soa;
    soa.minimum_s = 900;
    reply.authorities.push_back({N("."), RrType::kSoa, dns::RrClass::kIn, 900, soa});
  }
  return {kdns::testing::Encode(reply)};
}

// kubedns's DNS path (DnsHandlerFixture) with autopath, the records of ClusterSnapshot, and
// World's upstream for every name outside them.
class WalkFixture : public DnsHandlerFixture {
 public:
  explicit WalkFixture(bool autopath = true,
                       size_t max_waiting = server::WaitingBudget::kDefaultMax,
                       uint64_t total_timeout_ms = 400, const server::UdpOptions& udp = {})
      : DnsHandlerFixture(ClusterSnapshot()),
        world_(std::make_unique<kdns::testing::FakeDnsServer>(loop, World)) {
    forwarder_options().total_timeout_ms = total_timeout_ms;
    SetWaitingBudget(max_waiting);
    if (autopath) EnableAutopath();
    Serve(std::make_shared<const UpstreamRoutes>(std::vector<UpstreamRoute>{},
                                                 upstream::UpstreamSet{world_->address()},
                                                 DefaultSource::kFlag),
          udp);
  }
  ~WalkFixture() { StopServing(); }

  dns::Message Ask(const std::string& name, RrType type = RrType::kA) {
    return DnsHandlerFixture::Ask(QuerySpec(name).Type(type).Edns());
  }

  // The names the upstream was asked, in order.
  std::vector<std::string> Asked() const {
    std::vector<std::string> names;
    for (const auto& query : world_->queries()) {
      // Lower-cased: the forwarder sends names in random case (0x20).
      if (query.parsed) names.push_back(query.message.questions[0].name.Lowercased().ToText());
    }
    return names;
  }

 private:
  std::unique_ptr<kdns::testing::FakeDnsServer> world_;
};

bool IsCname(const dns::ResourceRecord& record, const std::string& owner,
             const std::string& target) {
  const auto* cname = std::get_if<dns::RdataCname>(&record.rdata);
  return record.owner == N(owner) && cname != nullptr && cname->target == N(target);
}

}  // namespace

TEST_CASE(
    "an external name is completed with one query: candidates in order, the first that "
    "exists wins",
    "[kubedns][autopath][handler]") {
  WalkFixture f;
  dns::Message reply = f.Ask("www.example.com.default.svc.cluster.local.");
  CHECK(reply.header.id == 0x4242);
  CHECK(reply.rcode() == dns::Rcode::kNoError);
  CHECK_FALSE(reply.header.aa);  // the address is the upstream's
  REQUIRE(reply.answers.size() == 2);
  CHECK(
      IsCname(reply.answers[0], "www.example.com.default.svc.cluster.local.", "www.example.com."));
  CHECK(reply.answers[1].rdata == dns::Rdata{kdns::testing::A("192.0.2.80")});
  // Our CNAME's TTL (30) bounds the whole answer.
  for (const auto& record : reply.answers) CHECK(record.ttl_s == 30);
  // svc.Z and Z from the records; the node's domain, then the name itself, upstream.
  CHECK(
      (f.Asked() == std::vector<std::string>{"www.example.com.node.example.", "www.example.com."}));
  CHECK(f.Metric("kdns_kubedns_autopath_attempts_total") == 1);
  CHECK(f.Metric(R"(kdns_kubedns_autopath_hits_total{suffix="."})") == 1);
  CHECK(f.Metric(R"(kdns_kubedns_forward_queries_total{route="default",kind="autopath"})") == 2);
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="auth"})") == 1);
  CHECK(f.Metric("kdns_kubedns_forward_in_flight") == 0);

  SECTION("every type: AAAA walks the same way, and a NODATA at the name ends it") {
    dns::Message aaaa = f.Ask("www.example.com.default.svc.cluster.local.", RrType::kAaaa);
    CHECK(aaaa.rcode() == dns::Rcode::kNoError);
    REQUIRE(aaaa.answers.size() == 1);
    CHECK(
        IsCname(aaaa.answers[0], "www.example.com.default.svc.cluster.local.", "www.example.com."));
    CHECK(f.Metric(R"(kdns_kubedns_autopath_hits_total{suffix="."})") == 2);
  }
}

TEST_CASE("a service of another namespace is completed from the records, authoritatively",
          "[kubedns][autopath][handler]") {
  // With a receiver thread, the NXDOMAIN that starts the walk is left to the loop.
  server::UdpOptions udp;
  udp.receiver_thread = GENERATE(false, true);
  CAPTURE(udp.receiver_thread);
  WalkFixture f(/*autopath=*/true, server::WaitingBudget::kDefaultMax, 400, udp);
  dns::Message reply = f.Ask("web.other.default.svc.cluster.local.");
  CHECK(reply.rcode() == dns::Rcode::kNoError);
  CHECK(reply.header.aa);
  REQUIRE(reply.answers.size() == 2);
  CHECK(IsCname(reply.answers[0], "web.other.default.svc.cluster.local.",
                "web.other.svc.cluster.local."));
  CHECK(reply.answers[1].owner == N("web.other.svc.cluster.local."));
  CHECK(reply.answers[1].rdata == dns::Rdata{kdns::testing::A("10.96.0.20")});
  CHECK(f.Asked().empty());
  CHECK(f.Metric(R"(kdns_kubedns_autopath_hits_total{suffix="svc.cluster.local."})") == 1);
  // A cluster name asked in full (with ndots:5 it is searched first) wins at the root,
  // from the records too.
  dns::Message full = f.Ask("web.other.svc.cluster.local.default.svc.cluster.local.");
  REQUIRE(full.answers.size() == 2);
  CHECK(full.header.aa);
  CHECK((f.Asked() == std::vector<std::string>{"web.other.svc.cluster.local.node.example."}));
  CHECK(f.Metric(R"(kdns_kubedns_autopath_hits_total{suffix="."})") == 1);
  CHECK(f.Metric(R"(skydns_skydns_dns_request_count_total{system="auth"})") == 2);
  // An existing name is the receiver thread's.
  CHECK(f.Ask("web.other.svc.cluster.local.").answers.size() == 1);
  CHECK(f.stats().udp_fast_answers == (udp.receiver_thread ? 1u : 0u));
}

TEST_CASE("when every candidate is NXDOMAIN the answer is the name's own NXDOMAIN",
          "[kubedns][autopath][handler]") {
  dns::Message without;
  {
    WalkFixture off(/*autopath=*/false);
    without = off.Ask("nothing.here.default.svc.cluster.local.");
    CHECK(off.Asked().empty());
  }
  WalkFixture f;
  dns::Message reply = f.Ask("nothing.here.default.svc.cluster.local.");
  CHECK(reply == without);  // byte for byte the same answer
  CHECK(reply.rcode() == dns::Rcode::kNxDomain);
  CHECK((f.Asked() == std::vector<std::string>{"nothing.here.node.example.", "nothing.here."}));
  CHECK(f.Metric(R"(kdns_kubedns_autopath_misses_total{reason="nxdomain"})") == 1);
}

TEST_CASE("a NODATA candidate ends the walk with its SOA", "[kubedns][autopath][handler]") {
  WalkFixture f;
  dns::Message reply = f.Ask("host.default.svc.cluster.local.");
  CHECK(reply.rcode() == dns::Rcode::kNoError);
  REQUIRE(reply.answers.size() == 1);
  CHECK(IsCname(reply.answers[0], "host.default.svc.cluster.local.", "host.node.example."));
  CHECK(reply.answers[0].ttl_s == 30);
  REQUIRE(reply.authorities.size() == 1);
  CHECK(reply.authorities[0].type == RrType::kSoa);
  CHECK(reply.authorities[0].ttl_s == 30);
  CHECK((f.Asked() == std::vector<std::string>{"host.node.example."}));  // not host.
  CHECK(f.Metric(R"(kdns_kubedns_autopath_hits_total{suffix="node.example."})") == 1);
}

TEST_CASE("a candidate's own CNAME chain is kept, in ours and in the upstream's",
          "[kubedns][autopath][handler]") {
  WalkFixture f;
  dns::Message upstream = f.Ask("alias.example.com.default.svc.cluster.local.");
  CHECK(upstream.rcode() == dns::Rcode::kNoError);
  REQUIRE(upstream.answers.size() == 3);
  CHECK(IsCname(upstream.answers[0], "alias.example.com.default.svc.cluster.local.",
                "alias.example.com."));
  CHECK(IsCname(upstream.answers[1], "alias.example.com.", "www.example.com."));
  CHECK(upstream.answers[2].owner == N("www.example.com."));
  for (const auto& record : upstream.answers) CHECK(record.ttl_s <= 30);

  // An ExternalName service of another namespace: our CNAME, then the chase upstream.
  dns::Message external = f.Ask("ext.other.default.svc.cluster.local.");
  CHECK(external.rcode() == dns::Rcode::kNoError);
  CHECK_FALSE(external.header.aa);
  REQUIRE(external.answers.size() == 3);
  CHECK(IsCname(external.answers[0], "ext.other.default.svc.cluster.local.",
                "ext.other.svc.cluster.local."));
  CHECK(IsCname(external.answers[1], "ext.other.svc.cluster.local.", "www.example.com."));
  CHECK(external.answers[2].rdata == dns::Rdata{kdns::testing::A("192.0.2.80")});
  CHECK(f.Metric(R"(kdns_kubedns_autopath_hits_total{suffix="svc.cluster.local."})") == 1);
}

TEST_CASE("an upstream timeout during the walk answers as without autopath, never SERVFAIL",
          "[kubedns][autopath][handler]") {
  WalkFixture f;
  dns::Message reply = f.Ask("slow.default.svc.cluster.local.");
  CHECK(reply.rcode() == dns::Rcode::kNxDomain);
  CHECK(reply.answers.empty());
  // Asked again (the forwarder's retries), then it gave up: never slow.
  const std::vector<std::string> asked = f.Asked();
  CHECK_FALSE(asked.empty());
  CHECK(static_cast<size_t>(std::count(asked.begin(), asked.end(), "slow.node.example.")) ==
        asked.size());
  CHECK(f.Metric(R"(kdns_kubedns_autopath_misses_total{reason="failed"})") == 1);
  CHECK(f.Metric(R"(kdns_kubedns_forward_failures_total{reason="timeout"})") == 0);
  CHECK(f.Metric("kdns_kubedns_forward_in_flight") == 0);
}

TEST_CASE("names that exist and names autopath leaves alone are answered as without it",
          "[kubedns][autopath][handler]") {
  WalkFixture f;
  dns::Message service = f.Ask("kubernetes.default.svc.cluster.local.");
  REQUIRE(service.answers.size() == 1);
  CHECK(service.answers[0].type == RrType::kA);
  CHECK(f.Ask("default.svc.cluster.local.").rcode() == dns::Rcode::kNoError);  // NODATA
  CHECK(f.Ask("www.example.com.default.pod.cluster.local.").rcode() == dns::Rcode::kNxDomain);
  CHECK(f.Ask("www.example.com.under_score.svc.cluster.local.").rcode() == dns::Rcode::kNxDomain);
  CHECK(f.Ask("x.1.0.96.10.in-addr.arpa.", RrType::kPtr).rcode() == dns::Rcode::kNxDomain);
  CHECK(f.Metric("kdns_kubedns_autopath_attempts_total") == 0);
}

TEST_CASE("over the budget of waiting queries a walk's query gets its own NXDOMAIN at once",
          "[kubedns][autopath][handler]") {
  WalkFixture f(/*autopath=*/true, /*max_waiting=*/1);
  server::testing::UdpClient slow(f.udp_address());
  REQUIRE(slow.Send(QuerySpec("slow.default.svc.cluster.local.").Edns().Bytes()));
  REQUIRE(RunUntil(f.loop, [&] { return f.handler().pending() == 1; }));
  dns::Message reply = f.Ask("www.example.com.default.svc.cluster.local.");
  CHECK(reply.rcode() == dns::Rcode::kNxDomain);  // never SERVFAIL because of autopath
  CHECK(reply.answers.empty());
  CHECK(f.Metric(R"(kdns_kubedns_autopath_misses_total{reason="overloaded"})") == 1);
  // The walk that held the slot ends as without autopath too.
  std::vector<uint8_t> late = RunUntilReply(f.loop, slow);
  CHECK(Parse(late).rcode() == dns::Rcode::kNxDomain);
  CHECK(f.handler().pending() == 0);
}

TEST_CASE("a walk whose TCP client goes away is dropped at once", "[kubedns][autopath][handler]") {
  // The silent upstream's queries wait far longer than the test.
  WalkFixture f(/*autopath=*/true, server::WaitingBudget::kDefaultMax, 60'000);
  {
    server::testing::TcpClient client(f.tcp_address());
    REQUIRE(client.Send(QuerySpec("slow.default.svc.cluster.local.").Edns().Bytes()));
    REQUIRE(RunUntil(f.loop, [&] { return f.handler().pending() == 1; }));
    client.Reset();  // gone: a half-close (FIN) would still be answered (RFC 7766)
  }
  REQUIRE(RunUntil(f.loop, [&] { return f.handler().pending() == 0; }));
  CHECK(f.Metric("kdns_kubedns_forward_in_flight") == 0);
  for (const char* reason : {"nxdomain", "failed", "overloaded"}) {  // nobody to answer
    CHECK(f.Metric(std::string("kdns_kubedns_autopath_misses_total{reason=\"") + reason + "\"}") ==
          0);
  }
  CHECK(f.Metric("kdns_kubedns_autopath_attempts_total") == 1);
}

}  // namespace kdns::kubedns

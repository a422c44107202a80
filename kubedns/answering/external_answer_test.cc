// The external zones through the Answerer, as kubedns's server asks: names and answers of
// CoreDNS's k8s_external (external_answer.h).
#include "kubedns/answering/external_answer.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/query_testing.h"
#include "common/dns/reverse.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/answering/answerer_testing.h"
#include "kubedns/records/records_testing.h"

namespace kdns::kubedns {
namespace {

using dns::testing::QuerySpec;

constexpr std::string_view kLoadBalancer =
    R"({"metadata":{"name":"web","namespace":"shop"},"spec":{"type":"LoadBalancer",)"
    R"("clusterIP":"10.96.0.10","externalIPs":["192.0.2.10"],"ports":[)"
    R"({"name":"http","protocol":"TCP","port":80},{"name":"dns","protocol":"UDP","port":53}]},)"
    R"("status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.1"},{"ip":"2001:db8::1"}]}}})";
constexpr std::string_view kByHostname =
    R"({"metadata":{"name":"cloud","namespace":"shop"},"spec":{"type":"LoadBalancer",)"
    R"("clusterIP":"10.96.0.11","ports":[{"name":"https","port":443}]},)"
    R"("status":{"loadBalancer":{"ingress":[{"hostname":"lb-1.example.net"}]}}})";
constexpr std::string_view kInternal =
    R"({"metadata":{"name":"db","namespace":"shop"},"spec":{"clusterIP":"10.96.0.12",)"
    R"("ports":[{"name":"sql","port":5432}]}})";

// kubedns's own Service, reached from outside at a load balancer (--external-ns-service).
constexpr std::string_view kKubeDns =
    R"({"metadata":{"name":"kube-dns","namespace":"kube-system"},"spec":{"type":"LoadBalancer",)"
    R"("clusterIP":"10.96.0.53","ports":[{"name":"dns","protocol":"UDP","port":53}]},)"
    R"("status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.53"},{"ip":"2001:db8::53"}]}}})";
// A second Service on web's external IP (two PTR records).
constexpr std::string_view kSharesIp =
    R"({"metadata":{"name":"api","namespace":"shop"},"spec":{"clusterIP":"10.96.0.13",)"
    R"("externalIPs":["192.0.2.10"],"ports":[{"name":"https","port":443}]}})";

AnswerConfig Config(bool external = true) {
  AnswerConfig config;
  config.zone = *dns::Name::FromText("cluster.local.");
  if (external) config.external.zones = {*dns::Name::FromText("example.org.")};
  return config;
}

struct Answered {
  AnswerResult result;
  dns::Message message;
  std::vector<uint8_t> bytes;
};

Answered Ask(const Answerer& answerer, const Snapshot* snapshot, std::string_view name,
             dns::RrType type) {
  QuerySpec query(name);
  query.Type(type);
  const std::vector<uint8_t> packet = query.Bytes();
  Answered answered;
  answered.bytes.resize(dns::kMaxMessageSize);
  answered.result =
      testing::Answer(answerer, snapshot, packet, dns::Transport::kUdp, answered.bytes);
  answered.bytes.assign(answered.result.response.begin(), answered.result.response.end());
  REQUIRE(dns::ParseMessage(answered.bytes, &answered.message) == dns::ParseError::kOk);
  return answered;
}

std::vector<std::string> Texts(const std::vector<dns::ResourceRecord>& records) {
  std::vector<std::string> out;
  for (const auto& record : records) out.push_back(dns::RecordToText(record));
  return out;
}

std::vector<std::string> Normalized(std::initializer_list<std::string_view> texts) {
  std::vector<std::string> out;
  for (std::string_view text : texts) {
    dns::ResourceRecord record;
    REQUIRE(dns::RecordFromText(text, &record) == dns::ParseError::kOk);
    out.push_back(dns::RecordToText(record));
  }
  return out;
}

const std::string kSoa =
    "example.org. 5 IN SOA ns1.dns.example.org. hostmaster.dns.example.org. 0 7200 1800 86400 5";

TEST_CASE("External IPs and load balancer IPs answer under the external zone",
          "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kLoadBalancer, kByHostname, kInternal});
  Answerer answerer(Config());
  Answered a = Ask(answerer, snapshot.get(), "Web.Shop.Example.Org.", dns::RrType::kA);
  CHECK(a.result.kind == AnswerKind::kAnswered);
  CHECK(a.message.header.aa);
  CHECK(a.message.rcode() == dns::Rcode::kNoError);
  CHECK(Texts(a.message.answers) == Normalized({"Web.Shop.Example.Org. 5 IN A 192.0.2.10",
                                                "Web.Shop.Example.Org. 5 IN A 198.51.100.1"}));
  Answered aaaa = Ask(answerer, snapshot.get(), "web.shop.example.org.", dns::RrType::kAaaa);
  CHECK(Texts(aaaa.message.answers) == Normalized({"web.shop.example.org. 5 IN AAAA 2001:db8::1"}));
}

TEST_CASE("SRV under the external zone: every port, or the named one, weight over N",
          "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kLoadBalancer});
  Answerer answerer(Config());
  // 3 addresses x 2 ports: weight floor(100 / 6), as k8s_external; one record per port.
  Answered all = Ask(answerer, snapshot.get(), "web.shop.example.org.", dns::RrType::kSrv);
  CHECK(Texts(all.message.answers) ==
        Normalized({"web.shop.example.org. 5 IN SRV 0 16 80 web.shop.example.org.",
                    "web.shop.example.org. 5 IN SRV 0 16 53 web.shop.example.org."}));
  CHECK(all.message.additionals.size() == 3);
  Answered http =
      Ask(answerer, snapshot.get(), "_http._tcp.web.shop.example.org.", dns::RrType::kSrv);
  CHECK(Texts(http.message.answers) ==
        Normalized({"_http._tcp.web.shop.example.org. 5 IN SRV 0 33 80 web.shop.example.org."}));
  Answered wrong =
      Ask(answerer, snapshot.get(), "_http._udp.web.shop.example.org.", dns::RrType::kSrv);
  CHECK(wrong.message.rcode() == dns::Rcode::kNxDomain);
}

TEST_CASE("A load balancer known by name is a CNAME the server chases", "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kByHostname});
  Answerer answerer(Config());
  Answered a = Ask(answerer, snapshot.get(), "cloud.shop.example.org.", dns::RrType::kA);
  CHECK(a.result.kind == AnswerKind::kExternalTarget);
  CHECK(a.result.chase_target.ToText() == "lb-1.example.net.");
  CHECK(Texts(a.message.answers) ==
        Normalized({"cloud.shop.example.org. 5 IN CNAME lb-1.example.net."}));
  Answered srv = Ask(answerer, snapshot.get(), "cloud.shop.example.org.", dns::RrType::kSrv);
  CHECK(Texts(srv.message.answers) ==
        Normalized({"cloud.shop.example.org. 5 IN SRV 0 100 443 lb-1.example.net."}));
}

TEST_CASE("The external zone's apex, dns subdomain and negative answers", "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kLoadBalancer, kInternal});
  Answerer answerer(Config());
  const std::string serial = std::to_string(answerer.SoaSerial(*snapshot));
  std::string soa = kSoa;
  soa.replace(soa.find(" 0 7200"), 2, " " + serial);
  auto [name, type, rcode, answer, authority] =
      GENERATE_REF(table<std::string, dns::RrType, dns::Rcode, std::string, bool>({
          {"example.org.", dns::RrType::kSoa, dns::Rcode::kNoError, "SOA", false},
          {"example.org.", dns::RrType::kNs, dns::Rcode::kNoError,
           "example.org. 5 IN NS ns1.dns.example.org.", false},
          {"example.org.", dns::RrType::kA, dns::Rcode::kNoError, "", true},
          {"dns.example.org.", dns::RrType::kA, dns::Rcode::kNoError, "", true},
          {"ns1.dns.example.org.", dns::RrType::kA, dns::Rcode::kNoError, "", true},
          {"ns2.dns.example.org.", dns::RrType::kA, dns::Rcode::kNxDomain, "", true},
          {"shop.example.org.", dns::RrType::kA, dns::Rcode::kNoError, "", true},
          {"other.example.org.", dns::RrType::kA, dns::Rcode::kNxDomain, "", true},
          {"web.shop.example.org.", dns::RrType::kTxt, dns::Rcode::kNoError, "", true},
          {"db.shop.example.org.", dns::RrType::kA, dns::Rcode::kNxDomain, "", true},
          {"x.web.shop.example.org.", dns::RrType::kA, dns::Rcode::kNxDomain, "", true},
          {"a.b.c.web.shop.example.org.", dns::RrType::kA, dns::Rcode::kNxDomain, "", true},
      }));
  INFO(name << " " << dns::RrTypeToText(type));
  Answered got = Ask(answerer, snapshot.get(), name, type);
  CHECK(got.message.header.aa);
  CHECK(got.message.rcode() == rcode);
  std::vector<std::string> answers = Texts(got.message.answers);
  if (answer == "SOA") {
    CHECK(answers == Normalized({soa}));
  } else if (answer.empty()) {
    CHECK(answers.empty());
  } else {
    CHECK(answers == Normalized({answer}));
  }
  if (authority) {
    CHECK(Texts(got.message.authorities) == Normalized({soa}));
  } else {
    CHECK(got.message.authorities.empty());
  }
}

TEST_CASE("Without --external-zone its names are not kubedns's; before sync they fail",
          "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kLoadBalancer});
  Answerer off(Config(false));
  CHECK(Ask(off, snapshot.get(), "web.shop.example.org.", dns::RrType::kA).result.kind ==
        AnswerKind::kNotOurs);
  Answerer on(Config());
  Answered early = Ask(on, nullptr, "web.shop.example.org.", dns::RrType::kA);
  CHECK(early.message.rcode() == dns::Rcode::kServFail);
  // The cluster zone does not change.
  Answered cluster = Ask(on, snapshot.get(), "web.shop.svc.cluster.local.", dns::RrType::kA);
  CHECK(Texts(cluster.message.answers) ==
        Normalized({"web.shop.svc.cluster.local. 30 IN A 10.96.0.10"}));
}

TEST_CASE("The most specific external zone answers", "[kubedns][external]") {
  ExternalConfig config;
  config.zones = {*dns::Name::FromText("example.org."), *dns::Name::FromText("lb.example.org.")};
  ExternalAnswerer answerer(config);
  CHECK(answerer.ZoneOf(*dns::Name::FromText("web.shop.lb.example.org.")) == 1u);
  CHECK(answerer.ZoneOf(*dns::Name::FromText("web.shop.example.org.")) == 0u);
  CHECK_FALSE(answerer.ZoneOf(*dns::Name::FromText("example.com.")).has_value());
}

TEST_CASE("ns1.dns under the external zone has the kube-dns Service's external addresses",
          "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kLoadBalancer, kKubeDns});
  Answerer answerer(Config());
  Answered a = Ask(answerer, snapshot.get(), "ns1.dns.example.org.", dns::RrType::kA);
  CHECK(a.message.rcode() == dns::Rcode::kNoError);
  CHECK(Texts(a.message.answers) == Normalized({"ns1.dns.example.org. 5 IN A 203.0.113.53"}));
  CHECK(a.message.authorities.empty());
  Answered aaaa = Ask(answerer, snapshot.get(), "ns1.dns.example.org.", dns::RrType::kAaaa);
  CHECK(Texts(aaaa.message.answers) == Normalized({"ns1.dns.example.org. 5 IN AAAA 2001:db8::53"}));
  // The NS answer carries them as glue, as k8s_external's.
  Answered ns = Ask(answerer, snapshot.get(), "example.org.", dns::RrType::kNs);
  CHECK(Texts(ns.message.answers) == Normalized({"example.org. 5 IN NS ns1.dns.example.org."}));
  CHECK(Texts(ns.message.additionals) ==
        Normalized({"ns1.dns.example.org. 5 IN A 203.0.113.53",
                    "ns1.dns.example.org. 5 IN AAAA 2001:db8::53"}));

  // Another Service named by --external-ns-service; none: NODATA with the SOA, no glue.
  AnswerConfig other = Config();
  other.external.ns_service_namespace = "shop";
  other.external.ns_service_name = "web";
  Answerer by_web(other);
  CHECK(
      Texts(Ask(by_web, snapshot.get(), "ns1.dns.example.org.", dns::RrType::kA).message.answers) ==
      Normalized(
          {"ns1.dns.example.org. 5 IN A 192.0.2.10", "ns1.dns.example.org. 5 IN A 198.51.100.1"}));
  AnswerConfig none = Config();
  none.external.ns_service_name.clear();
  Answerer without(none);
  Answered nodata = Ask(without, snapshot.get(), "ns1.dns.example.org.", dns::RrType::kA);
  CHECK(nodata.message.rcode() == dns::Rcode::kNoError);
  CHECK(nodata.message.answers.empty());
  CHECK(nodata.message.authorities.size() == 1);
  CHECK(Ask(without, snapshot.get(), "example.org.", dns::RrType::kNs).message.additionals.empty());
}

TEST_CASE("A reverse external zone answers PTR for external addresses, into the forward zone",
          "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kLoadBalancer, kInternal, kSharesIp});
  AnswerConfig config = Config();
  // The reverse zones of 192.0.2.0/24, 198.51.0.0/16 and 2001:db8::/32, and one that holds
  // cluster IPs too (10.96.0.0/16).
  for (const char* zone : {"2.0.192.in-addr.arpa.", "51.198.in-addr.arpa.",
                           "8.b.d.0.1.0.0.2.ip6.arpa.", "96.10.in-addr.arpa."}) {
    config.external.zones.push_back(*dns::Name::FromText(zone));
  }
  Answerer answerer(config);
  const std::string v6_name = dns::ReverseName(*IpAddress::Parse("2001:db8::1")).ToText();
  auto [name, type, rcode, answers] =
      GENERATE_REF(table<std::string, dns::RrType, dns::Rcode, std::vector<std::string>>({
          // an IP two Services share: a PTR each, in (namespace, name) order
          {"10.2.0.192.in-addr.arpa.",
           dns::RrType::kPtr,
           dns::Rcode::kNoError,
           {"10.2.0.192.in-addr.arpa. 5 IN PTR api.shop.example.org.",
            "10.2.0.192.in-addr.arpa. 5 IN PTR web.shop.example.org."}},
          {"1.100.51.198.in-addr.arpa.",
           dns::RrType::kPtr,
           dns::Rcode::kNoError,
           {"1.100.51.198.in-addr.arpa. 5 IN PTR web.shop.example.org."}},
          {v6_name,
           dns::RrType::kPtr,
           dns::Rcode::kNoError,
           {v6_name + " 5 IN PTR web.shop.example.org."}},
          {"10.2.0.192.in-addr.arpa.", dns::RrType::kA, dns::Rcode::kNoError, {}},
          // no Service's address: NXDOMAIN, the zone is ours
          {"11.2.0.192.in-addr.arpa.", dns::RrType::kPtr, dns::Rcode::kNxDomain, {}},
          {"x.2.0.192.in-addr.arpa.", dns::RrType::kPtr, dns::Rcode::kNxDomain, {}},
          {"0.2.0.192.in-addr.arpa.", dns::RrType::kPtr, dns::Rcode::kNxDomain, {}},
          // shorter than an address: an address may lie below (RFC 8020): NODATA
          {"100.51.198.in-addr.arpa.", dns::RrType::kPtr, dns::Rcode::kNoError, {}},
          {"7.51.198.in-addr.arpa.", dns::RrType::kPtr, dns::Rcode::kNoError, {}},
          // a cluster IP inside a reverse external zone keeps its cluster PTR
          {"12.0.96.10.in-addr.arpa.",
           dns::RrType::kPtr,
           dns::Rcode::kNoError,
           {"12.0.96.10.in-addr.arpa. 30 IN PTR db.shop.svc.cluster.local."}},
          {"99.0.96.10.in-addr.arpa.", dns::RrType::kPtr, dns::Rcode::kNxDomain, {}},
      }));
  INFO(name << " " << dns::RrTypeToText(type));
  Answered got = Ask(answerer, snapshot.get(), name, type);
  CHECK(got.result.kind == AnswerKind::kAnswered);
  CHECK(got.message.header.aa);
  CHECK(got.message.rcode() == rcode);
  std::vector<std::string> expected;
  for (const std::string& text : answers) expected.push_back(Normalized({text}).front());
  CHECK(Texts(got.message.answers) == expected);
  if (answers.empty()) CHECK(got.message.authorities.size() == 1);  // the reverse zone's SOA
}

TEST_CASE("Reverse names outside every reverse external zone are the cluster's as before",
          "[kubedns][external]") {
  auto snapshot = testing::SyncedRecords({kLoadBalancer});
  Answerer answerer(Config());  // example.org. only
  // The external IP has no PTR of ours: not kubedns's to answer (forwarded).
  CHECK(Ask(answerer, snapshot.get(), "10.2.0.192.in-addr.arpa.", dns::RrType::kPtr).result.kind ==
        AnswerKind::kNotOurs);
  Answered cluster = Ask(answerer, snapshot.get(), "10.0.96.10.in-addr.arpa.", dns::RrType::kPtr);
  CHECK(Texts(cluster.message.answers) ==
        Normalized({"10.0.96.10.in-addr.arpa. 30 IN PTR web.shop.svc.cluster.local."}));
}

}  // namespace
}  // namespace kdns::kubedns

#include "kubedns/answering/answerer.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/query_testing.h"
#include "common/k8s/decode.h"
#include "kubedns/answering/answerer_testing.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/records/records_testing.h"

namespace kdns::kubedns {
namespace {

using dns::testing::QuerySpec;
using namespace testing;

AnswerConfig Config() {
  AnswerConfig config;
  config.zone = *dns::Name::FromText("cluster.local.");
  return config;
}

struct Answered {
  AnswerResult result;
  dns::Message message;
  std::vector<uint8_t> bytes;
};

Answered Ask(const Answerer& answerer, const Snapshot* snapshot, const QuerySpec& query,
             dns::Transport transport = dns::Transport::kUdp) {
  const std::vector<uint8_t> bytes = query.Bytes();
  Answered answered;
  answered.bytes.resize(dns::kMaxMessageSize);
  answered.result = Answer(answerer, snapshot, bytes, transport, answered.bytes);
  answered.bytes.assign(answered.result.response.begin(), answered.result.response.end());
  if (!answered.bytes.empty()) {
    REQUIRE(dns::ParseMessage(answered.bytes, &answered.message) == dns::ParseError::kOk);
  }
  return answered;
}

std::string Normalize(const std::string& text) {
  dns::ResourceRecord record;
  INFO(text);
  REQUIRE(dns::RecordFromText(text, &record) == dns::ParseError::kOk);
  return dns::RecordToText(record);
}

std::vector<std::string> Texts(const std::vector<dns::ResourceRecord>& records) {
  std::vector<std::string> out;
  out.reserve(records.size());
  for (const auto& record : records) out.push_back(dns::RecordToText(record));
  return out;
}

std::vector<std::string> Types(const std::vector<dns::ResourceRecord>& records) {
  std::vector<std::string> out;
  out.reserve(records.size());
  for (const auto& record : records) out.emplace_back(dns::RrTypeToText(record.type));
  return out;
}

// The transport of a test that asks over both.
dns::Transport Over(bool tcp) { return tcp ? dns::Transport::kTcp : dns::Transport::kUdp; }

}  // namespace

TEST_CASE("every conformance case is answered as the specification says",
          "[kubedns][conformance]") {
  const rapidjson::Document cases = ConformanceCases();
  auto snapshot = ConformanceSnapshot();
  Answerer answerer(Config());
  const uint32_t default_ttl = cases["ttl"].GetUint();
  size_t checked = 0;

  for (const auto& c : cases["cases"].GetArray()) {
    ++checked;
    INFO("case " << c["id"].GetString() << ": " << c["q"].GetString() << " " << c["t"].GetString());
    const QuerySpec query = QueryOf(c);
    Answered got = Ask(answerer, snapshot.get(), query, TransportOf(c));
    REQUIRE(got.result.kind == AnswerKind::kAnswered);
    const dns::Message& m = got.message;
    INFO(dns::MessageToText(m));

    CHECK(dns::RcodeToText(m.rcode()) == std::string(c["rcode"].GetString()));
    // Zone-wide rules: the question echoed exactly, AA and RA set, TC only where expected.
    REQUIRE(m.questions.size() == 1);
    CHECK(m.questions[0].name.ToText() == c["q"].GetString());
    CHECK(m.header.aa);
    CHECK(m.header.ra);
    bool want_tc = c.HasMember("tc") && c["tc"].GetBool();
    CHECK(m.header.tc == want_tc);
    CHECK(m.edns.has_value() == query.has_edns());

    std::vector<std::string> answers = Texts(m.answers);
    std::set<std::string> unique(answers.begin(), answers.end());
    CHECK(unique.size() == answers.size());  // no duplicate records
    if (c.HasMember("answer")) {
      std::vector<std::string> want;
      for (const auto& rr : c["answer"].GetArray()) want.push_back(Normalize(rr.GetString()));
      if (c.HasMember("ordered") && c["ordered"].GetBool()) {
        CHECK(answers == want);
      } else {
        std::vector<std::string> sorted_answers = answers;
        std::sort(sorted_answers.begin(), sorted_answers.end());
        std::sort(want.begin(), want.end());
        CHECK(sorted_answers == want);
      }
    }
    if (c.HasMember("answer_count")) CHECK(m.answers.size() == c["answer_count"].GetUint());
    if (c.HasMember("answer_types")) {
      std::set<std::string> want;
      for (const auto& t : c["answer_types"].GetArray()) want.insert(t.GetString());
      auto types = Types(m.answers);
      CHECK(std::set<std::string>(types.begin(), types.end()) == want);
    }
    if (c.HasMember("authority_types")) {
      std::set<std::string> want;
      for (const auto& t : c["authority_types"].GetArray()) want.insert(t.GetString());
      auto types = Types(m.authorities);
      CHECK(std::set<std::string>(types.begin(), types.end()) == want);
    }
    const dns::RdataSoa* soa = nullptr;
    for (const auto* section : {&m.answers, &m.authorities}) {
      for (const auto& rr : *section) {
        if (rr.type == dns::RrType::kSoa) soa = &std::get<dns::RdataSoa>(rr.rdata);
      }
    }
    if (c.HasMember("soa_mname")) {
      REQUIRE(soa != nullptr);
      CHECK(soa->mname.ToText() == c["soa_mname"].GetString());
    }
    if (c.HasMember("soa_rname")) {
      REQUIRE(soa != nullptr);
      CHECK(soa->rname.ToText() == c["soa_rname"].GetString());
    }
    if (c.HasMember("soa_minimum")) {
      REQUIRE(soa != nullptr);
      CHECK(soa->minimum_s == c["soa_minimum"].GetUint());
    }
    if (c.HasMember("additional_contains")) {
      auto additional = Texts(m.additionals);
      for (const auto& rr : c["additional_contains"].GetArray()) {
        CHECK(std::count(additional.begin(), additional.end(), Normalize(rr.GetString())) == 1);
      }
    }
    // Data records carry the default TTL unless the case spells out another.
    if (!c.HasMember("answer")) {
      for (const auto& rr : m.answers) {
        if (rr.type != dns::RrType::kSoa) CHECK(rr.ttl_s == default_ttl);
      }
    }
  }
  CHECK(checked == cases["cases"].GetArray().Size());
  CHECK(checked >= 40);
}

TEST_CASE("cluster-zone queries get SERVFAIL until the first full sync", "[kubedns]") {
  Answerer answerer(Config());
  Answered before = Ask(answerer, nullptr, QuerySpec("kubernetes.default.svc.cluster.local."));
  CHECK(before.message.rcode() == dns::Rcode::kServFail);

  RecordTreeWriter writer;
  auto unsynced = writer.Publish();
  CHECK(Ask(answerer, unsynced.get(), QuerySpec("kubernetes.default.svc.cluster.local."))
            .message.rcode() == dns::Rcode::kServFail);
  writer.MarkSynced();
  auto synced = writer.Publish();
  CHECK(Ask(answerer, synced.get(), QuerySpec("kubernetes.default.svc.cluster.local."))
            .message.rcode() == dns::Rcode::kNxDomain);
}

TEST_CASE("names kubedns does not own are marked for forwarding", "[kubedns]") {
  auto snapshot = ConformanceSnapshot();
  Answerer answerer(Config());
  for (const char* name :
       {"www.example.com.", "local.", "4.3.2.1.in-addr.arpa.", "10.in-addr.arpa."}) {
    CAPTURE(name);
    Answered got = Ask(answerer, snapshot.get(), QuerySpec(name));
    CHECK(got.result.kind == AnswerKind::kNotOurs);
    CHECK(got.message.rcode() == dns::Rcode::kRefused);
    CHECK_FALSE(got.message.header.aa);
  }
}

TEST_CASE(
    "reverse names get SERVFAIL until the first full sync, then unknown ones are "
    "forwarded",
    "[kubedns]") {
  Answerer answerer(Config());
  RecordTreeWriter writer;
  auto unsynced = writer.Publish();
  for (const Snapshot* snapshot : {static_cast<const Snapshot*>(nullptr), unsynced.get()}) {
    Answered got =
        Ask(answerer, snapshot, QuerySpec("1.0.96.10.in-addr.arpa.").Type(dns::RrType::kPtr));
    CHECK(got.result.kind == AnswerKind::kAnswered);
    CHECK(got.message.rcode() == dns::Rcode::kServFail);
  }
  auto synced = ConformanceSnapshot();
  CHECK(Ask(answerer, synced.get(), QuerySpec("1.0.96.10.in-addr.arpa.").Type(dns::RrType::kPtr))
            .result.kind == AnswerKind::kAnswered);
  Answered unknown =
      Ask(answerer, synced.get(), QuerySpec("9.9.96.10.in-addr.arpa.").Type(dns::RrType::kPtr));
  CHECK(unknown.result.kind == AnswerKind::kNotOurs);
  CHECK(unknown.result.reverse);
}

TEST_CASE("an ExternalName chain that leaves the zone is handed over with its target",
          "[kubedns]") {
  auto snapshot = SyncedRecords({R"({"metadata":{"name":"out","namespace":"x"},
    "spec":{"type":"ExternalName","externalName":"WWW.Example.com"}})",
                                 R"({"metadata":{"name":"alias","namespace":"x"},
    "spec":{"type":"ExternalName","externalName":"out.x.svc.cluster.local"}})"});
  Answerer answerer(Config());

  Answered direct = Ask(answerer, snapshot.get(), QuerySpec("Out.x.svc.cluster.local.").Edns(4096));
  CHECK(direct.result.kind == AnswerKind::kExternalTarget);
  CHECK(direct.result.chase_target.IdenticalTo(*dns::Name::FromText("WWW.Example.com.")));
  CHECK(direct.message.rcode() == dns::Rcode::kNoError);
  CHECK(direct.message.header.aa);
  CHECK(Texts(direct.message.answers) ==
        std::vector<std::string>{"Out.x.svc.cluster.local. 30 IN CNAME WWW.Example.com."});
  CHECK(direct.message.authorities.empty());

  Answered chained = Ask(answerer, snapshot.get(),
                         QuerySpec("alias.x.svc.cluster.local.").Type(dns::RrType::kAaaa));
  CHECK(chained.result.kind == AnswerKind::kExternalTarget);
  CHECK(chained.result.chase_target.ToText() == "WWW.Example.com.");
  CHECK(Types(chained.message.answers) == std::vector<std::string>{"CNAME", "CNAME"});

  // CNAME and ANY questions are answered by the CNAME itself.
  for (dns::RrType type : {dns::RrType::kCname, dns::RrType::kAny}) {
    CAPTURE(dns::RrTypeToText(type));
    Answered cname =
        Ask(answerer, snapshot.get(), QuerySpec("out.x.svc.cluster.local.").Type(type));
    CHECK(cname.result.kind == AnswerKind::kAnswered);
    CHECK(Types(cname.message.answers) == std::vector<std::string>{"CNAME"});
  }
}

TEST_CASE("malformed queries are answered FORMERR or dropped", "[kubedns]") {
  auto snapshot = ConformanceSnapshot();
  Answerer answerer(Config());
  std::vector<uint8_t> out(dns::kMaxMessageSize);
  SECTION("shorter than a header: dropped") {
    const uint8_t junk[5] = {1, 2, 3, 4, 5};
    CHECK(Answer(answerer, snapshot.get(), junk, dns::Transport::kUdp, out).kind ==
          AnswerKind::kDropped);
  }
  SECTION("a response sent to us: dropped, so two servers never ping-pong") {
    auto query = QuerySpec("kubernetes.default.svc.cluster.local.").Bytes();
    query[2] |= 0x80;
    CHECK(Answer(answerer, snapshot.get(), query, dns::Transport::kUdp, out).kind ==
          AnswerKind::kDropped);
  }
  SECTION("no question: FORMERR with the query's ID") {
    const uint8_t header[12] = {0xab, 0xcd, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    auto result = Answer(answerer, snapshot.get(), header, dns::Transport::kUdp, out);
    CHECK(result.kind == AnswerKind::kFormErr);
    REQUIRE(result.response.size() >= 12);
    CHECK(result.response[0] == 0xab);
    CHECK(result.response[1] == 0xcd);
    CHECK((result.response[3] & 0x0f) == 1);
  }
  SECTION("a question cut short: FORMERR") {
    auto query = QuerySpec("kubernetes.default.svc.cluster.local.").Bytes();
    query.resize(query.size() - 3);
    CHECK(Answer(answerer, snapshot.get(), query, dns::Transport::kUdp, out).kind ==
          AnswerKind::kFormErr);
  }
}

TEST_CASE("EDNS versions above 0 get BADVERS", "[kubedns]") {
  auto snapshot = ConformanceSnapshot();
  Answerer answerer(Config());
  Answered got = Ask(answerer, snapshot.get(),
                     QuerySpec("kubernetes.default.svc.cluster.local.").Edns(4096).EdnsVersion(1));
  CHECK(got.message.rcode() == dns::Rcode::kBadVers);
  CHECK(got.message.answers.empty());
}

TEST_CASE("ANY gets one RRset of the name (RFC 8482), over UDP and TCP", "[kubedns]") {
  auto snapshot = ConformanceSnapshot();
  Answerer answerer(Config());
  const bool tcp = GENERATE(false, true);
  CAPTURE(tcp);
  auto any = [&](const char* name) {
    return Ask(answerer, snapshot.get(), QuerySpec(name).Type(dns::RrType::kAny), Over(tcp));
  };
  // A dual-stack service: its A records, not the AAAA ones as well.
  CHECK(Texts(any("dual.default.svc.cluster.local.").message.answers) ==
        std::vector<std::string>{"dual.default.svc.cluster.local. 30 IN A 10.96.0.20"});
  // No IPv4 address: the AAAA records.
  CHECK(Types(any("v6only.default.svc.cluster.local.").message.answers) ==
        std::vector<std::string>{"AAAA"});
  // A headless service with v4 and v6 endpoints: no more than its A question gets.
  Answered headless = any("headless.default.svc.cluster.local.");
  Answered a =
      Ask(answerer, snapshot.get(), QuerySpec("headless.default.svc.cluster.local."), Over(tcp));
  CHECK(Texts(headless.message.answers) == Texts(a.message.answers));
  CHECK(headless.bytes.size() == a.bytes.size());
  Answered host = any("my-pet.headless.default.svc.cluster.local.");
  CHECK(Types(host.message.answers) == std::vector<std::string>{"A"});
  // Names with one RRset keep it; an apex ANY is the SOA alone.
  CHECK(Types(any("_https._tcp.kubernetes.default.svc.cluster.local.").message.answers) ==
        std::vector<std::string>{"SRV"});
  CHECK(Types(any("cluster.local.").message.answers) == std::vector<std::string>{"SOA"});
  CHECK(Types(any("dns-version.cluster.local.").message.answers) ==
        std::vector<std::string>{"TXT"});
  CHECK(Types(any("1.0.96.10.in-addr.arpa.").message.answers) == std::vector<std::string>{"PTR"});
  CHECK(Types(any("10-244-1-5.default.pod.cluster.local.").message.answers) ==
        std::vector<std::string>{"A"});
  // Negative answers as for any type.
  Answered nx = any("nope.default.svc.cluster.local.");
  CHECK(nx.message.rcode() == dns::Rcode::kNxDomain);
  CHECK(Types(nx.message.authorities) == std::vector<std::string>{"SOA"});
}

TEST_CASE("service SRV without a port name lists every address entry with port 0", "[kubedns]") {
  auto snapshot = ConformanceSnapshot();
  Answerer answerer(Config());
  SECTION("ClusterIP") {
    Answered got = Ask(answerer, snapshot.get(),
                       QuerySpec("kubernetes.default.svc.cluster.local.").Type(dns::RrType::kSrv));
    CHECK(Texts(got.message.answers) ==
          std::vector<std::string>{"kubernetes.default.svc.cluster.local. 30 IN SRV 10 100 0 "
                                   "kubernetes.default.svc.cluster.local."});
  }
  SECTION("headless: one per host, weight floor(100/N)") {
    Answered got = Ask(answerer, snapshot.get(),
                       QuerySpec("headless.default.svc.cluster.local.").Type(dns::RrType::kSrv));
    CHECK(got.message.answers.size() == 4);
    for (const auto& rr : got.message.answers) {
      CHECK(std::get<dns::RdataSrv>(rr.rdata).weight == 25);
      CHECK(std::get<dns::RdataSrv>(rr.rdata).port == 0);
    }
  }
}

TEST_CASE("pod records follow --pod-records", "[kubedns]") {
  auto snapshot = ConformanceSnapshot();
  SECTION("insecure answers any well-formed dashed IP, v4 and v6") {
    Answerer answerer(Config());
    CHECK(Texts(Ask(answerer, snapshot.get(), QuerySpec("1-2-3-4.any.pod.cluster.local."))
                    .message.answers) ==
          std::vector<std::string>{"1-2-3-4.any.pod.cluster.local. 30 IN A 1.2.3.4"});
    CHECK(Texts(Ask(answerer, snapshot.get(),
                    QuerySpec("fd00--1.any.pod.cluster.local.").Type(dns::RrType::kAaaa))
                    .message.answers) ==
          std::vector<std::string>{"fd00--1.any.pod.cluster.local. 30 IN AAAA fd00::1"});
    // Three dashes, yet v6.
    CHECK(Texts(Ask(answerer, snapshot.get(),
                    QuerySpec("fd00--7-1.any.pod.cluster.local.").Type(dns::RrType::kAaaa))
                    .message.answers) ==
          std::vector<std::string>{"fd00--7-1.any.pod.cluster.local. 30 IN AAAA fd00::7:1"});
    CHECK(Ask(answerer, snapshot.get(),
              QuerySpec("1-2-3-4.any.pod.cluster.local.").Type(dns::RrType::kAaaa))
              .message.rcode() == dns::Rcode::kNoError);
    CHECK(Ask(answerer, snapshot.get(), QuerySpec("1-2-3-999.any.pod.cluster.local."))
              .message.rcode() == dns::Rcode::kNxDomain);
  }
  SECTION("verified answers only the IPs of live pods in the namespace asked") {
    AnswerConfig config = Config();
    config.pod_records = PodRecords::kVerified;
    Answerer answerer(config);
    auto pod = k8s::DecodePod(R"({"metadata":{"name":"p","namespace":"default"},
      "status":{"phase":"Running","podIP":"10.244.1.5","podIPs":[{"ip":"10.244.1.5"}]}})");
    auto alias = k8s::DecodeService(R"({"metadata":{"name":"alias","namespace":"default"},
      "spec":{"type":"ExternalName","externalName":"10-244-1-5.default.pod.cluster.local"}})");
    REQUIRE(pod.ok());
    REQUIRE(alias.ok());
    RecordTreeWriter writer;
    writer.UpsertPod(pod.value());
    writer.UpsertService(alias.value());
    writer.MarkSynced();
    auto verified = writer.Publish();
    CHECK(Texts(Ask(answerer, verified.get(), QuerySpec("10-244-1-5.default.pod.cluster.local."))
                    .message.answers) ==
          std::vector<std::string>{"10-244-1-5.default.pod.cluster.local. 30 IN A 10.244.1.5"});
    CHECK(Types(Ask(answerer, verified.get(), QuerySpec("alias.default.svc.cluster.local."))
                    .message.answers) == std::vector<std::string>{"CNAME", "A"});
    // The IP in another namespace, and an IP no pod has: the names do not exist.
    CHECK(Ask(answerer, verified.get(), QuerySpec("10-244-1-5.other.pod.cluster.local."))
              .message.rcode() == dns::Rcode::kNxDomain);
    CHECK(Ask(answerer, verified.get(), QuerySpec("10-244-1-6.default.pod.cluster.local."))
              .message.rcode() == dns::Rcode::kNxDomain);
    writer.DeletePod("default", "p");
    auto gone = writer.Publish();
    CHECK(Ask(answerer, gone.get(), QuerySpec("10-244-1-5.default.pod.cluster.local."))
              .message.rcode() == dns::Rcode::kNxDomain);
    auto chased = Ask(answerer, gone.get(), QuerySpec("alias.default.svc.cluster.local."));
    CHECK(chased.message.rcode() == dns::Rcode::kNxDomain);
    CHECK(Types(chased.message.answers) == std::vector<std::string>{"CNAME"});
  }
  SECTION("disabled answers NXDOMAIN") {
    AnswerConfig config = Config();
    config.pod_records = PodRecords::kDisabled;
    Answerer answerer(config);
    CHECK(Ask(answerer, snapshot.get(), QuerySpec("1-2-3-4.any.pod.cluster.local."))
              .message.rcode() == dns::Rcode::kNxDomain);
  }
}

TEST_CASE("a CNAME loop between ExternalName services ends", "[kubedns]") {
  auto snapshot = SyncedRecords({R"({"metadata":{"name":"a","namespace":"x"},
    "spec":{"type":"ExternalName","externalName":"b.x.svc.cluster.local"}})",
                                 R"({"metadata":{"name":"b","namespace":"x"},
    "spec":{"type":"ExternalName","externalName":"a.x.svc.cluster.local"}})"});
  Answerer answerer(Config());
  Answered got = Ask(answerer, snapshot.get(), QuerySpec("a.x.svc.cluster.local."));
  CHECK(got.message.answers.size() >= 2);
  CHECK(got.message.answers.size() <= 10);
  for (const auto& rr : got.message.answers) CHECK(rr.type == dns::RrType::kCname);
}

TEST_CASE("an externalName with a trailing dot answers as the same name without it", "[kubedns]") {
  auto snapshot = SyncedRecords(
      {R"({"metadata":{"name":"target","namespace":"x"},"spec":{"clusterIP":"10.96.5.5"}})",
       R"({"metadata":{"name":"dotted","namespace":"x"},
            "spec":{"type":"ExternalName","externalName":"target.x.svc.cluster.local."}})",
       R"({"metadata":{"name":"plain","namespace":"x"},
            "spec":{"type":"ExternalName","externalName":"target.x.svc.cluster.local"}})",
       R"({"metadata":{"name":"out-dotted","namespace":"x"},
            "spec":{"type":"ExternalName","externalName":"www.example.com."}})"});
  Answerer answerer(Config());
  for (dns::RrType type : {dns::RrType::kA, dns::RrType::kCname, dns::RrType::kAaaa}) {
    CAPTURE(dns::RrTypeToText(type));
    Answered dotted =
        Ask(answerer, snapshot.get(), QuerySpec("dotted.x.svc.cluster.local.").Type(type));
    Answered plain =
        Ask(answerer, snapshot.get(), QuerySpec("plain.x.svc.cluster.local.").Type(type));
    CHECK(dotted.message.rcode() == dns::Rcode::kNoError);
    CHECK(dotted.message.rcode() == plain.message.rcode());
    std::vector<std::string> want = Texts(plain.message.answers);
    for (auto& text : want) {
      if (text.starts_with("plain.")) text.replace(0, 5, "dotted");  // the question's owner
    }
    CHECK(Texts(dotted.message.answers) == want);
  }
  Answered out = Ask(answerer, snapshot.get(), QuerySpec("out-dotted.x.svc.cluster.local."));
  CHECK(out.result.kind == AnswerKind::kExternalTarget);
  CHECK(out.result.chase_target.ToText() == "www.example.com.");
}

}  // namespace kdns::kubedns

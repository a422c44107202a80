// The answers written from prepared templates (AnswerConfig::Writing::kPrepared) are the
// bytes the general builder writes (kGeneral), over every conformance case and the names
// that decide whether a template applies.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/query_testing.h"
#include "common/k8s/decode.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/answering/answerer_testing.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/records/records_testing.h"

namespace kdns::kubedns {
namespace {

using namespace testing;

AnswerConfig Config(AnswerConfig::Writing writing) {
  AnswerConfig config;
  config.zone = *dns::Name::FromText("cluster.local.");
  config.soa_serial_base = 0xA1B2C3D0;  // every octet of the serial patched
  config.writing = writing;
  return config;
}

std::vector<uint8_t> AnswerBytes(const Answerer& answerer, const Snapshot* snapshot,
                                 const std::vector<uint8_t>& query, dns::Transport transport) {
  std::vector<uint8_t> buffer(dns::kMaxMessageSize);
  AnswerResult result = Answer(answerer, snapshot, query, transport, buffer);
  return {result.response.begin(), result.response.end()};
}

std::string Describe(const std::vector<uint8_t>& bytes) {
  dns::Message message;
  if (dns::ParseMessage(bytes, &message) != dns::ParseError::kOk) return "(does not parse)";
  return dns::MessageToText(message);
}

void RequireIdentical(const Answerer& prepared, const Answerer& general, const Snapshot* snapshot,
                      dns::testing::QuerySpec spec, dns::Transport transport) {
  const std::vector<uint8_t> query = spec.Id(0x4321).Bytes();
  INFO("over " << (transport == dns::Transport::kTcp ? "TCP" : "UDP") << ":\n" << Describe(query));
  const std::vector<uint8_t> fast = AnswerBytes(prepared, snapshot, query, transport);
  const std::vector<uint8_t> slow = AnswerBytes(general, snapshot, query, transport);
  INFO("prepared:\n" << Describe(fast) << "general:\n" << Describe(slow));
  REQUIRE_FALSE(slow.empty());
  CHECK(fast == slow);
}

TEST_CASE("prepared answers are byte-identical to the general builder's on every conformance case",
          "[kubedns][conformance]") {
  const rapidjson::Document cases = ConformanceCases();
  auto snapshot = ConformanceSnapshot();
  Answerer prepared(Config(AnswerConfig::Writing::kPrepared));
  Answerer general(Config(AnswerConfig::Writing::kGeneral));
  size_t negative = 0;
  for (const auto& c : cases["cases"].GetArray()) {
    const std::string name = c["q"].GetString();
    const dns::Transport transport = TransportOf(c);
    RequireIdentical(prepared, general, snapshot.get(), QueryOf(c), transport);
    // The same again with and without EDNS, and in another case (the pointers aim at the
    // question's own spelling).
    const dns::testing::QuerySpec other =
        QueryOf(c).has_edns() ? QuestionOf(c, name) : QueryOf(c).Edns(4096);
    RequireIdentical(prepared, general, snapshot.get(), other, transport);
    std::string upper = name;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    RequireIdentical(prepared, general, snapshot.get(), QueryOf(c, upper), transport);
    if (std::string(c["rcode"].GetString()) != "NOERROR" ||
        (c.HasMember("answer") && c["answer"].GetArray().Empty())) {
      ++negative;
    }
  }
  CHECK(negative > 10);  // the cases do exercise the negative answers
}

TEST_CASE("prepared negative answers match where the question holds the SOA's names", "[kubedns]") {
  auto snapshot = ConformanceSnapshot();
  Answerer prepared(Config(AnswerConfig::Writing::kPrepared));
  Answerer general(Config(AnswerConfig::Writing::kGeneral));
  // MNAME is ns.dns.Z and RNAME hostmaster.Z: a question ending in dns.Z, ns.dns.Z or
  // hostmaster.Z gives them a longer suffix to point at.
  const char* names[] = {
      "cluster.local.",
      "CLUSTER.local.",
      "dns.cluster.local.",
      "ns.dns.cluster.local.",
      "Ns.Dns.Cluster.Local.",
      "x.ns.dns.cluster.local.",
      "hostmaster.cluster.local.",
      "a.hostmaster.cluster.local.",
      "dnsx.cluster.local.",
      "svc.cluster.local.",
      "nosuch.default.svc.cluster.local.",
      "kubernetes.default.svc.cluster.local.default.svc.cluster.local.",
      "kubernetes.default.svc.svc.cluster.local.",
      "kubernetes.default.svc.cluster.local.cluster.local.",
      "kubernetes.default.svc.cluster.local.",
      "a.b.c.d.e.f.g.h.kubernetes.default.svc.cluster.local.",
      "1-2-3-4.default.pod.cluster.local.",
  };
  for (const char* name : names) {
    for (dns::RrType type :
         {dns::RrType::kA, dns::RrType::kAaaa, dns::RrType::kTxt, dns::RrType::kSrv,
          dns::RrType::kMx, dns::RrType::kSoa, dns::RrType::kNs, dns::RrType::kAny}) {
      const dns::testing::QuerySpec question = dns::testing::QuerySpec(name).Type(type);
      // Over UDP with EDNS, over TCP without.
      RequireIdentical(prepared, general, snapshot.get(),
                       dns::testing::QuerySpec(question).Edns(4096), dns::Transport::kUdp);
      RequireIdentical(prepared, general, snapshot.get(), question, dns::Transport::kTcp);
    }
  }
}

}  // namespace
}  // namespace kdns::kubedns

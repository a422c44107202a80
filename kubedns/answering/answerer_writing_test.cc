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
                                 const Asked& asked) {
  std::vector<uint8_t> query = BuildQuery(asked, /*id=*/0x4321);
  std::vector<uint8_t> buffer(dns::kMaxMessageSize);
  AnswerResult result = Answer(answerer, snapshot, query, TransportOf(asked), buffer);
  return {result.response.begin(), result.response.end()};
}

std::string Describe(const std::vector<uint8_t>& bytes) {
  dns::Message message;
  if (dns::ParseMessage(bytes, &message) != dns::ParseError::kOk) return "(does not parse)";
  return dns::MessageToText(message);
}

void RequireIdentical(const Answerer& prepared, const Answerer& general, const Snapshot* snapshot,
                      const Asked& asked) {
  INFO(asked.name << " " << asked.type << (asked.tcp ? " TCP" : "")
                  << (asked.edns_version >= 0 ? " EDNS" : ""));
  const std::vector<uint8_t> fast = AnswerBytes(prepared, snapshot, asked);
  const std::vector<uint8_t> slow = AnswerBytes(general, snapshot, asked);
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
    Asked asked = AskedOf(c);
    RequireIdentical(prepared, general, snapshot.get(), asked);
    // The same again with and without EDNS, and in another case (the pointers aim at the
    // question's own spelling).
    Asked other = asked;
    other.edns_version = asked.edns_version >= 0 ? -1 : 0;
    RequireIdentical(prepared, general, snapshot.get(), other);
    Asked upper = asked;
    for (char& ch : upper.name)
      ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    RequireIdentical(prepared, general, snapshot.get(), upper);
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
    for (const char* type : {"A", "AAAA", "TXT", "SRV", "MX", "SOA", "NS", "ANY"}) {
      for (bool tcp : {false, true}) {
        Asked asked{name, type, tcp, tcp ? -1 : 0};
        RequireIdentical(prepared, general, snapshot.get(), asked);
      }
    }
  }
}

}  // namespace
}  // namespace kdns::kubedns

// Test helpers of the answerer's tests (answerer_test.cc, answerer_writing_test.cc): a
// question as the tests write it (Asked), taken from a conformance case or written out, its
// query bytes, and an answer made as kubedns's server makes it, from an admitted query.
// Header-only; tests only; any thread.
#pragma once

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/dns/query_testing.h"
#include "common/dns/transport.h"
#include "common/dns/types.h"
#include "common/server/admission.h"
#include "kubedns/answering/answerer.h"

namespace kdns::kubedns::testing {

struct Asked {
  std::string name;
  std::string type;
  bool tcp = false;
  int edns_version = -1;  // -1: no EDNS
  uint16_t payload = 4096;
};

// The question of one case of test/conformance/cases.json.
inline Asked AskedOf(const rapidjson::Value& conformance_case) {
  const rapidjson::Value& c = conformance_case;
  Asked asked{c["q"].GetString(), c["t"].GetString()};
  asked.tcp = c.HasMember("tcp") && c["tcp"].GetBool();
  if (c.HasMember("edns")) asked.edns_version = c["edns"].GetInt();
  if (c.HasMember("payload")) asked.payload = static_cast<uint16_t>(c["payload"].GetUint());
  return asked;
}

inline dns::Transport TransportOf(const Asked& asked) {
  return asked.tcp ? dns::Transport::kTcp : dns::Transport::kUdp;
}

inline std::vector<uint8_t> BuildQuery(const Asked& asked, uint16_t id = 0x1234) {
  const auto type = dns::RrTypeFromText(asked.type);
  REQUIRE(type);
  dns::testing::QuerySpec spec(asked.name);
  spec.Type(*type).Id(id);
  if (asked.edns_version >= 0) {
    spec.Edns(asked.payload).EdnsVersion(static_cast<uint8_t>(asked.edns_version));
  }
  return spec.Bytes();
}

// Admits `packet` as kubedns's server does, then answers it into `buffer`.
inline AnswerResult Answer(const Answerer& answerer, const Snapshot* snapshot,
                           std::span<const uint8_t> packet, dns::Transport transport,
                           std::span<uint8_t> buffer) {
  server::Admission admission;
  server::Admit(packet, transport, kAdmissionPolicy, &admission);
  return answerer.Answer(snapshot, admission, buffer);
}

}  // namespace kdns::kubedns::testing

// Test helpers of the answerer's tests (answerer_test.cc, answerer_writing_test.cc): the query
// of a conformance case (a dns::testing::QuerySpec, the one query builder) and the transport it
// comes over, and an answer made as kubedns's server makes it, from an admitted query.
// Header-only; tests only; any thread.
#pragma once

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/query_testing.h"
#include "common/dns/transport.h"
#include "common/dns/types.h"
#include "common/server/admission.h"
#include "kubedns/answering/answerer.h"

namespace kdns::kubedns::testing {

// The question of one case of test/conformance/cases.json ("q", "t"), without EDNS.
inline dns::testing::QuerySpec QuestionOf(const rapidjson::Value& conformance_case,
                                          std::string_view name) {
  const auto type = dns::RrTypeFromText(conformance_case["t"].GetString());
  REQUIRE(type);
  dns::testing::QuerySpec query(name);
  query.Type(*type);
  return query;
}

// The query of one case: its question (asking `name` instead, if given), with EDNS (version and
// payload) where the case has it.
inline dns::testing::QuerySpec QueryOf(const rapidjson::Value& conformance_case,
                                       std::optional<std::string_view> name = std::nullopt) {
  const rapidjson::Value& c = conformance_case;
  dns::testing::QuerySpec query = QuestionOf(c, name.value_or(c["q"].GetString()));
  if (c.HasMember("edns")) {
    query.Edns(c.HasMember("payload") ? static_cast<uint16_t>(c["payload"].GetUint()) : 4096)
        .EdnsVersion(static_cast<uint8_t>(c["edns"].GetInt()));
  }
  return query;
}

// The transport the case's query comes over.
inline dns::Transport TransportOf(const rapidjson::Value& conformance_case) {
  const bool tcp = conformance_case.HasMember("tcp") && conformance_case["tcp"].GetBool();
  return tcp ? dns::Transport::kTcp : dns::Transport::kUdp;
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

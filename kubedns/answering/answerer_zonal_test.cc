// The zone-scoped names of headless services (--zonal, AnswerConfig::zonal): the cases of
// test/conformance/zonal_cases.json through the answerer, the outcome each is counted
// under, and what the records keep of zones with and without the option.
#include <rapidjson/document.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

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

using dns::testing::QuerySpec;
using namespace testing;

AnswerConfig ZonalConfig(bool zonal = true) {
  AnswerConfig config;
  config.zone = *dns::Name::FromText("cluster.local.");
  config.zonal = zonal;
  return config;
}

// test/conformance/zonal_objects.json, loaded as kubedns loads it with or without --zonal.
std::shared_ptr<const Snapshot> ZonalSnapshot(SliceInfo::ZoneKeeping zones) {
  auto list = k8s::DecodeList(ReadFile("test/conformance/zonal_objects.json"));
  REQUIRE(list.ok());
  RecordTreeWriter writer;
  if (zones == SliceInfo::ZoneKeeping::kKeep) writer.KeepZones();
  writer.ReplaceAll({list.value().services, list.value().endpoint_slices, {}, {}, {}});
  writer.MarkSynced();
  return writer.Publish();
}

rapidjson::Document ZonalCases() {
  rapidjson::Document cases;
  std::string text = ReadFile("test/conformance/zonal_cases.json");
  REQUIRE_FALSE(cases.Parse(text.c_str()).HasParseError());
  return cases;
}

struct Asked {
  AnswerResult result;
  dns::Message message;
};

Asked Ask(const Answerer& answerer, const Snapshot& snapshot, const QuerySpec& query,
          dns::Transport transport = dns::Transport::kUdp) {
  const std::vector<uint8_t> packet = query.Bytes();
  std::vector<uint8_t> buffer(dns::kMaxMessageSize);
  Asked asked;
  asked.result = Answer(answerer, &snapshot, packet, transport, buffer);
  REQUIRE(dns::ParseMessage(asked.result.response, &asked.message) == dns::ParseError::kOk);
  return asked;
}

std::vector<std::string> Sorted(const std::vector<dns::ResourceRecord>& records) {
  std::vector<std::string> texts;
  texts.reserve(records.size());
  for (const auto& record : records) texts.push_back(dns::RecordToText(record));
  std::sort(texts.begin(), texts.end());
  return texts;
}

std::string Normalize(const char* text) {
  dns::ResourceRecord record;
  INFO(text);
  REQUIRE(dns::RecordFromText(text, &record) == dns::ParseError::kOk);
  return dns::RecordToText(record);
}

// Checks the rcode, the answer section, the SOA of negative answers and the glue of `c`.
void CheckCase(const Answerer& answerer, const Snapshot& snapshot, const rapidjson::Value& c) {
  INFO("case " << c["id"].GetString() << ": " << c["q"].GetString() << " " << c["t"].GetString());
  Asked got = Ask(answerer, snapshot, QueryOf(c), TransportOf(c));
  INFO(dns::MessageToText(got.message));
  CHECK(dns::RcodeToText(got.message.rcode()) == std::string(c["rcode"].GetString()));
  CHECK(got.message.header.aa);
  std::vector<std::string> want;
  for (const auto& rr : c["answer"].GetArray()) want.push_back(Normalize(rr.GetString()));
  std::sort(want.begin(), want.end());
  CHECK(Sorted(got.message.answers) == want);
  if (c.HasMember("authority_types")) {
    REQUIRE(got.message.authorities.size() == 1);
    CHECK(got.message.authorities[0].type == dns::RrType::kSoa);
  }
  if (c.HasMember("additional_contains")) {
    std::vector<std::string> additional = Sorted(got.message.additionals);
    for (const auto& rr : c["additional_contains"].GetArray()) {
      CHECK(std::count(additional.begin(), additional.end(), Normalize(rr.GetString())) == 1);
    }
  }
  if (c.HasMember("additional_lacks")) {
    std::vector<std::string> additional = Sorted(got.message.additionals);
    for (const auto& rr : c["additional_lacks"].GetArray()) {
      CHECK(std::count(additional.begin(), additional.end(), Normalize(rr.GetString())) == 0);
    }
  }
}

}  // namespace

TEST_CASE("every zonal conformance case is answered as CoreDNS's zonal answers it",
          "[kubedns][zonal]") {
  const rapidjson::Document cases = ZonalCases();
  Answerer answerer(ZonalConfig());
  auto snapshot = ZonalSnapshot(SliceInfo::ZoneKeeping::kKeep);
  for (const auto& c : cases["cases"].GetArray()) CheckCase(answerer, *snapshot, c);
  CHECK(cases["cases"].GetArray().Size() >= 20);

  // Without --zonal the names are as long as ever: NXDOMAIN (CoreDNS's disabled cases).
  Answerer off(ZonalConfig(false));
  auto dropped = ZonalSnapshot(SliceInfo::ZoneKeeping::kDrop);
  for (const auto& c : cases["off_cases"].GetArray()) CheckCase(off, *dropped, c);
}

TEST_CASE("a zonal answer names its directive and outcome", "[kubedns][zonal]") {
  Answerer answerer(ZonalConfig());
  auto snapshot = ZonalSnapshot(SliceInfo::ZoneKeeping::kKeep);
  auto outcome_of = [&](const char* name) {
    return Ask(answerer, *snapshot, QuerySpec(name)).result;
  };
  struct Row {
    const char* name;
    ZonalDirective directive;
    ZonalOutcome outcome;
  };
  const Row row = GENERATE(
      Row{"us-west-2a.pin._zone.hdls", ZonalDirective::kPin, ZonalOutcome::kZone},
      Row{"us-west-2c.pin._zone.hdls", ZonalDirective::kPin, ZonalOutcome::kEmpty},
      Row{"us-west-2c.prefer._zone.hdls", ZonalDirective::kPrefer, ZonalOutcome::kFallback},
      Row{"us-west-2a.prefer._zone.empty", ZonalDirective::kPrefer, ZonalOutcome::kEmpty},
      Row{"us-west-2a.prefer._zone.clstr", ZonalDirective::kPrefer, ZonalOutcome::kNxDomain});
  CAPTURE(row.name);
  AnswerResult result = outcome_of((std::string(row.name) + ".testns.svc.cluster.local.").c_str());
  CHECK(result.zonal_directive == row.directive);
  CHECK(result.zonal_outcome == row.outcome);
  CHECK(outcome_of("us-west-2a.florp._zone.hdls.testns.svc.cluster.local.").zonal_directive ==
        ZonalDirective::kNone);
  CHECK(outcome_of("hdls.testns.svc.cluster.local.").zonal_directive == ZonalDirective::kNone);
}

TEST_CASE("without --zonal the records keep no zone", "[kubedns][zonal]") {
  auto snapshot = ZonalSnapshot(SliceInfo::ZoneKeeping::kDrop);
  const ServiceRecords* hdls = snapshot->FindService("testns", "hdls");
  REQUIRE(hdls != nullptr);
  CHECK(hdls->zones().empty());
  for (const auto& [name, slice] : hdls->slices()) CHECK(slice->zones.table == nullptr);
  // An answerer with the option over such records finds every zone empty.
  Answerer answerer(ZonalConfig());
  Asked got =
      Ask(answerer, *snapshot, QuerySpec("us-west-2a.pin._zone.hdls.testns.svc.cluster.local."));
  CHECK(got.message.rcode() == dns::Rcode::kNoError);
  CHECK(got.message.answers.empty());
}

TEST_CASE("a slice keeps each zone once and a run per change of zone", "[kubedns][zonal]") {
  auto slice = k8s::DecodeEndpointSlice(
      R"({"metadata":{"name":"s","namespace":"n","labels":{"kubernetes.io/service-name":"h"}},)"
      R"("addressType":"IPv4","endpoints":[)"
      R"({"addresses":["10.0.0.1"],"zone":"a"},{"addresses":["10.0.0.2","10.0.0.3"],"zone":"a"},)"
      R"({"addresses":["10.0.0.4"],"zone":"b"},{"addresses":["10.0.0.5"]},)"
      R"({"addresses":["10.0.0.6"],"zone":"a"}]})");
  REQUIRE(slice.ok());
  SliceInfo info = SliceInfo::FromSlice(slice.value(), SliceInfo::ZoneKeeping::kKeep);
  REQUIRE(info.zones.table != nullptr);
  CHECK(info.zones.table->names == std::vector<std::string>{"a", "b"});
  CHECK(info.zones.table->runs.size() == 4);  // a from 0, b from 3, none from 4, a from 5
  std::vector<std::string> zones;
  for (size_t i = 0; i < info.addresses.size(); ++i) zones.emplace_back(info.zone(i));
  CHECK(zones == std::vector<std::string>{"a", "a", "a", "b", "", "a"});
  CHECK(SliceInfo::FromSlice(slice.value()).zones.table == nullptr);
}

TEST_CASE("a change of an endpoint's zone alone changes the records", "[kubedns][zonal]") {
  // CoreDNS's TestEndpointsEquivalentZoneChange: zonal answers depend on it.
  auto slice_in = [](const char* zone) {
    auto slice = k8s::DecodeEndpointSlice(
        std::string(R"({"metadata":{"name":"s","namespace":"n","labels":)"
                    R"({"kubernetes.io/service-name":"h"}},"addressType":"IPv4",)"
                    R"("endpoints":[{"addresses":["10.0.0.1"],"zone":")") +
        zone + R"("}]})");
    REQUIRE(slice.ok());
    return slice.value();
  };
  auto service = k8s::DecodeService(
      R"({"metadata":{"name":"h","namespace":"n"},"spec":{"clusterIP":"None"}})");
  REQUIRE(service.ok());
  RecordTreeWriter writer;
  writer.KeepZones();
  writer.UpsertService(service.value());
  writer.UpsertSlice(slice_in("a"));
  writer.MarkSynced();
  const uint64_t before = writer.Publish()->records_version();
  writer.UpsertSlice(slice_in("a"));
  CHECK(writer.Publish()->records_version() == before);
  writer.UpsertSlice(slice_in("b"));
  auto after = writer.Publish();
  CHECK(after->records_version() == before + 1);
  const ServiceRecords* records = after->FindService("n", "h");
  REQUIRE(records != nullptr);
  CHECK(records->zones() == std::vector<std::string>{"b"});
}

}  // namespace kdns::kubedns

// Records for kubedns's tests: a synced snapshot of the Services and slices a test writes
// out (SyncedRecords), the DNS spec's conformance objects (test/conformance/objects.json) as
// a published snapshot, loaded the way the objects-file source loads them, the conformance
// cases (test/conformance/cases.json), and a file reader.
// Header-only; tests only; any thread.
#pragma once

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

#include "common/k8s/decode.h"
#include "kubedns/records/record_tree.h"

namespace kdns::kubedns::testing {

// The synced records of a test: each of `services` (a Service's JSON) and of `slices` (an
// EndpointSlice's).
inline std::shared_ptr<const Snapshot> SyncedRecords(
    std::initializer_list<std::string_view> services,
    std::initializer_list<std::string_view> slices = {}) {
  RecordTreeWriter writer;
  for (std::string_view json : services) {
    auto service = k8s::DecodeService(json);
    REQUIRE(service.ok());
    writer.UpsertService(service.value());
  }
  for (std::string_view json : slices) {
    auto slice = k8s::DecodeEndpointSlice(json);
    REQUIRE(slice.ok());
    writer.UpsertSlice(slice.value());
  }
  writer.MarkSynced();
  return writer.Publish();
}

// A file's whole text (a relative path is the repository root's); it must be readable.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::shared_ptr<const Snapshot> ConformanceSnapshot() {
  auto list = k8s::DecodeList(ReadFile("test/conformance/objects.json"));
  REQUIRE(list.ok());
  RecordTreeWriter writer;
  writer.ReplaceAll(
      {list.value().services, list.value().endpoint_slices, list.value().endpoints, {}, {}});
  writer.MarkSynced();
  return writer.Publish();
}

// The cases of test/conformance/cases.json: {"ttl": ..., "cases": [{"q", "t", ...}]}.
inline rapidjson::Document ConformanceCases() {
  rapidjson::Document cases;
  std::string text = ReadFile("test/conformance/cases.json");
  REQUIRE_FALSE(cases.Parse(text.c_str()).HasParseError());
  return cases;
}

}  // namespace kdns::kubedns::testing

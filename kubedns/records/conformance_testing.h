// The DNS spec's conformance objects (test/conformance/objects.json) as a published
// snapshot, loaded the way the objects-file source loads them, and its cases
// (test/conformance/cases.json): for the answerer's tests.
// Header-only; tests only; any thread.
#pragma once

#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "common/k8s/decode.h"
#include "kubedns/records/record_tree.h"

namespace kdns::kubedns::testing {

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

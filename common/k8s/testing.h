// Helpers for the k8s decoder's unit tests (header-only, not part of the library): fixture
// files (read relative to the repository root, where the tests run), watch-stream lines,
// compact renderings of decoded objects for assertions, and an environment from a map.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/ip_address.h"
#include "common/base/next_line.h"
#include "common/k8s/api_config.h"
#include "common/k8s/objects.h"

namespace kdns::k8s::testing {

// An environment holding just `vars`, for what reads $VARIABLES through an EnvLookup.
inline EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// The bytes of test/<path>; fails the test when the file cannot be read.
inline std::string ReadFixture(std::string_view path) {
  std::string full = "test/" + std::string(path);
  std::ifstream in(full, std::ios::binary);
  INFO("fixture " << full << " (tests run from the repository root)");
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string ReadCapture(std::string_view name) {
  return ReadFixture("fixtures/k8s-api/" + std::string(name) + ".body");
}

// The lines of a watch-stream body, without their "\n". A last line without "\n" (a stream
// cut short) is returned as it is.
inline std::vector<std::string> Lines(std::string_view body) {
  std::vector<std::string> lines;
  while (!body.empty()) lines.emplace_back(NextLine(&body));
  return lines;
}

inline IpAddress Ip(std::string_view text) {
  auto address = IpAddress::Parse(text);
  INFO(text);
  REQUIRE(address.has_value());
  return *address;
}

inline std::vector<IpAddress> Ips(std::initializer_list<std::string_view> texts) {
  std::vector<IpAddress> addresses;
  for (std::string_view text : texts) addresses.push_back(Ip(text));
  return addresses;
}

// "ns/name@rv".
inline std::string Key(const ObjectMeta& meta) {
  return meta.ns + "/" + meta.name + "@" + meta.resource_version.text;
}

template <typename T>
std::vector<std::string> Keys(const std::vector<T>& objects) {
  std::vector<std::string> keys;
  for (const T& object : objects) keys.push_back(Key(object.meta));
  return keys;
}

}  // namespace kdns::k8s::testing

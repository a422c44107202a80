#include "common/base/version.h"

#include <catch2/catch.hpp>
#include <regex>
#include <string>

namespace kdns {
namespace {

TEST_CASE("the version is git describe's, shaped as an image tag", "[version]") {
  // A release (0.2.0), a commit after one (0.2.0-3-gabc1234), no tag in reach
  // (0.0.0-dev-gabc1234), any of them -dirty: never empty, never "+" (not allowed in a tag).
  INFO(kVersion);
  CHECK(std::regex_match(kVersion, std::regex(R"([0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?)")));
}

TEST_CASE("the revision is a commit hash or unknown", "[version]") {
  INFO(kRevision);
  const std::string revision = kRevision;
  CHECK((revision == "unknown" || std::regex_match(revision, std::regex("[0-9a-f]{40,64}"))));
}

}  // namespace
}  // namespace kdns

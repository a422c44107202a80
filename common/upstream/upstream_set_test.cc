#include "common/upstream/upstream_set.h"

#include <catch2/catch.hpp>

namespace kdns::upstream {
namespace {

TEST_CASE("Upstream sets compare by their ordered addresses", "[upstream]") {
  auto a = UpstreamSet::Parse("10.0.0.1, 10.0.0.2#54");
  REQUIRE(a.has_value());
  CHECK(a->size() == 2);
  CHECK(a->ToString() == "10.0.0.1#53,10.0.0.2#54");
  auto b = UpstreamSet::Parse("10.0.0.1,10.0.0.2#54");
  auto reversed = UpstreamSet::Parse("10.0.0.2#54,10.0.0.1");
  CHECK(*a == *b);
  CHECK(a->Hash() == b->Hash());
  CHECK_FALSE(*a == *reversed);
  CHECK_FALSE(UpstreamSet::Parse("10.0.0.1,nope").has_value());
  CHECK(UpstreamSet::Parse("")->empty());
}

}  // namespace
}  // namespace kdns::upstream

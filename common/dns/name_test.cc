#include "common/dns/name.h"

#include <catch2/catch.hpp>
#include <string>
#include <unordered_set>

#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;

TEST_CASE("Name parses text into labels and prints it back", "[dns][name]") {
  auto [input, text, labels] = GENERATE(table<std::string, std::string, size_t>({
      {".", ".", 0},
      {"", ".", 0},
      {"com.", "com.", 1},
      {"Foo.Example.", "Foo.Example.", 2},
      {"Foo.Example", "Foo.Example.", 2},
      {"kubernetes.default.svc.cluster.local.", "kubernetes.default.svc.cluster.local.", 5},
      {"a\\.b.c.", "a\\.b.c.", 2},
      {"a\\046b.c.", "a\\.b.c.", 2},
      {"sp\\032ace.", "sp\\032ace.", 1},
      {"q\\\"uote\\\\.", "q\\\"uote\\\\.", 1},
      {"\\000\\255.", "\\000\\255.", 1},
      {"\\x.", "x.", 1},
  }));
  Name name;
  REQUIRE(Name::FromText(input, &name) == ParseError::kOk);
  CHECK(name.ToText() == text);
  CHECK(name.label_count() == labels);
  CHECK(Name::FromText(name.ToText())->IdenticalTo(name));
}

TEST_CASE("Name text parsing reports each kind of malformed input", "[dns][name]") {
  std::string label63(63, 'a');
  std::string label64(64, 'a');
  // 4 labels of 63 (+4 length octets) = 256 + root: too long; 3 labels + one of 61 = 255.
  std::string too_long = label63 + "." + label63 + "." + label63 + "." + label63 + ".";
  std::string longest = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');
  auto [input, error] = GENERATE_COPY(table<std::string, ParseError>({
      {"a..b.", ParseError::kEmptyLabel},
      {".a.", ParseError::kEmptyLabel},
      {"..", ParseError::kEmptyLabel},
      {label64 + ".", ParseError::kLabelTooLong},
      {label63 + ".", ParseError::kOk},
      {too_long, ParseError::kNameTooLong},
      {longest, ParseError::kOk},
      {longest + ".", ParseError::kOk},
      {"a\\", ParseError::kBadEscape},
      {"a\\25", ParseError::kBadEscape},
      {"a\\256.", ParseError::kBadEscape},
      {"a\\2x5.", ParseError::kBadEscape},
  }));
  Name name;
  CHECK(Name::FromText(input, &name) == error);
  if (error == ParseError::kOk) CHECK(name.wire_length() <= Name::kMaxWireLength);
}

TEST_CASE("Name stores the uncompressed wire form", "[dns][name]") {
  Name name = N("Foo.Example.");
  const uint8_t expected[] = {3, 'F', 'o', 'o', 7, 'E', 'x', 'a', 'm', 'p', 'l', 'e', 0};
  CHECK(
      std::equal(name.wire().begin(), name.wire().end(), std::begin(expected), std::end(expected)));
  CHECK(name.label(0) == "Foo");
  CHECK(name.label(1) == "Example");
  CHECK(name.LabelOffset(1) == 4);
  CHECK(Name().wire().size() == 1);
  CHECK(Name().IsRoot());
}

TEST_CASE("Name comparison and hashing ignore case but keep it", "[dns][name]") {
  Name upper = N("KUBERNETES.Default.SVC.cluster.local.");
  Name lower = N("kubernetes.default.svc.cluster.local.");
  CHECK(upper == lower);
  CHECK(upper.EqualsIgnoringCase(lower));
  CHECK_FALSE(upper.IdenticalTo(lower));
  CHECK(upper.Hash() == lower.Hash());
  CHECK(NameHash{}(upper) == NameHash{}(lower));
  CHECK(upper.ToText() == "KUBERNETES.Default.SVC.cluster.local.");
  CHECK(upper.Lowercased().IdenticalTo(lower));
  CHECK(N("a.b.") != N("a.c."));
  CHECK(N("ab.") != N("a.b."));
  std::unordered_set<Name, NameHash> set = {upper, lower, N("other.")};
  CHECK(set.size() == 2);
}

TEST_CASE("Name case folding touches only ASCII letters", "[dns][name]") {
  // 0xC1 and 0xE1 differ by 0x20 but are not letters (RFC 4343 §3).
  CHECK(N("\\193.") != N("\\225."));
  CHECK(N("[.") != N("{."));
}

TEST_CASE("Name knows its ancestors", "[dns][name]") {
  Name name = N("svc.ns.svc.cluster.local.");
  CHECK(name.IsSubdomainOf(N("cluster.local.")));
  CHECK(name.IsSubdomainOf(N("CLUSTER.local.")));
  CHECK(name.IsSubdomainOf(name));
  CHECK(name.IsSubdomainOf(Name::Root()));
  CHECK_FALSE(name.IsSubdomainOf(N("luster.local.")));
  CHECK_FALSE(N("cluster.local.").IsSubdomainOf(name));
  CHECK_FALSE(N("xcluster.local.").IsSubdomainOf(N("cluster.local.")));
  CHECK(name.Parent() == N("ns.svc.cluster.local."));
  CHECK(name.StripLeft(3) == N("cluster.local."));
  CHECK(name.StripLeft(5).IsRoot());
  CHECK(name.StripLeft(9).IsRoot());
  CHECK(Name::Root().Parent().IsRoot());
}

TEST_CASE("Name builds from labels and suffixes", "[dns][name]") {
  Name zone = N("cluster.local.");
  auto name = Name::FromLabels({"my-svc", "my-ns", "svc"}, zone);
  REQUIRE(name);
  CHECK(name->ToText() == "my-svc.my-ns.svc.cluster.local.");
  CHECK(Name::Concat(N("a.b."), zone)->ToText() == "a.b.cluster.local.");
  CHECK(Name::Concat(Name::Root(), zone)->ToText() == "cluster.local.");

  Name prepended = zone;
  REQUIRE(prepended.PrependLabel("svc"));
  CHECK(prepended.ToText() == "svc.cluster.local.");
  CHECK(prepended.label_count() == 3);
  Name appended;
  REQUIRE(appended.AppendLabel(std::string_view("a.b")));
  CHECK(appended.ToText() == "a\\.b.");
}

TEST_CASE("Name building fails cleanly on overflow", "[dns][name]") {
  std::string label63(63, 'x');
  Name name = *Name::FromLabels({label63, label63, label63});  // 193 octets
  CHECK_FALSE(name.PrependLabel(label63));                     // would be 257
  CHECK_FALSE(name.AppendLabel(label63));
  CHECK(name.wire_length() == 193);  // unchanged
  CHECK_FALSE(name.AppendLabel(std::string_view("")));
  CHECK_FALSE(name.PrependLabel(std::string(64, 'y')));
  CHECK_FALSE(Name::FromLabels({"a", ""}).has_value());
  CHECK_FALSE(Name::Concat(name, name).has_value());
  REQUIRE(name.AppendLabel(std::string(61, 'z')));  // exactly 255
  CHECK(name.wire_length() == 255);
  CHECK_FALSE(name.AppendLabel(std::string_view("a")));
}

}  // namespace
}  // namespace kdns::dns

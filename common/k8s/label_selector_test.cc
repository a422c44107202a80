#include "common/k8s/label_selector.h"

#include <catch2/catch.hpp>

namespace kdns::k8s {
namespace {

const LabelSelector::Labels kWeb = {{"app", "web"}, {"tier", "frontend"}, {"team/owner", "a"}};
const LabelSelector::Labels kDb = {{"app", "db"}, {"tier", "backend"}};
const LabelSelector::Labels kNone = {};

LabelSelector Parsed(std::string_view text) {
  auto selector = LabelSelector::Parse(text);
  INFO(selector.error());
  REQUIRE(selector.ok());
  return *selector;
}

TEST_CASE("Every label selector operator matches as the API server's does", "[k8s][labels]") {
  auto [text, web, db, none] = GENERATE(table<std::string, bool, bool, bool>({
      {"", true, true, true},
      {"app", true, true, false},
      {"!app", false, false, true},
      {"app=web", true, false, false},
      {"app==web", true, false, false},
      {"app!=web", false, true, true},  // != also holds without the key
      {"app in (web,api)", true, false, false},
      {"app notin (web,api)", false, true, true},  // so does notin
      {"app in (db),tier=backend", false, true, false},
      {"app, !missing, tier notin (x)", true, true, false},
      {"team/owner=a", true, false, false},
      {"app=", false, false, false},  // an empty value is a value
  }));
  LabelSelector selector = Parsed(text);
  INFO(text);
  CHECK(selector.Matches(kWeb) == web);
  CHECK(selector.Matches(kDb) == db);
  CHECK(selector.Matches(kNone) == none);
}

TEST_CASE("A label selector's text is canonical, for the labelSelector parameter",
          "[k8s][labels]") {
  CHECK(Parsed(" app = web , tier in ( b , a ) , ! x ").text() == "app=web,tier in (a,b),!x");
  CHECK(Parsed("app==web,k notin (v)").text() == "app=web,k notin (v)");
  CHECK(Parsed("").empty());
}

TEST_CASE("Malformed label selectors are errors that name the requirement", "[k8s][labels]") {
  auto [text, error] = GENERATE(table<std::string, std::string>({
      {"app in (a", "unbalanced parentheses"},
      {"app in a", "\"app in a\": a set must be in parentheses"},
      {"app > 3", "\"app > 3\": unknown operator"},
      {"app=web,", "\"\": empty requirement"},
      {"-app=web", "not a label key"},
      {"Bad_Prefix/app", "not a label key"},
      {"app=we b", "not a label value"},
      {"app in (a,-b)", "not a label value"},
      {"!", "not a label key"},
  }));
  auto selector = LabelSelector::Parse(text);
  INFO(text);
  REQUIRE_FALSE(selector.ok());
  CHECK_THAT(selector.error(), Catch::Contains(error));
}

}  // namespace
}  // namespace kdns::k8s

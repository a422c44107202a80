#include "common/upstream/route_table.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::upstream {
namespace {

dns::Name N(std::string_view text) { return *dns::Name::FromText(text); }

struct TestRoute {
  dns::Name domain;
  std::string target;
  friend bool operator==(const TestRoute& a, const TestRoute& b) {
    return a.domain.IdenticalTo(b.domain) && a.target == b.target;
  }
};

TEST_CASE("The most specific domain route wins, case-insensitively", "[upstream][routes]") {
  RouteTable<TestRoute> table(
      {{N("corp.example."), "corp"}, {N("Eng.Corp.Example."), "eng"}, {N("example."), "example"}},
      {N("."), "default"});
  auto target = [&](std::string_view name) { return table.Lookup(N(name)).target; };
  CHECK(target("corp.example.") == "corp");
  CHECK(target("www.CORP.example.") == "corp");
  CHECK(target("a.b.eng.corp.example.") == "eng");
  CHECK(target("eng.corp.example.") == "eng");
  CHECK(target("other.example.") == "example");
  CHECK(target("example.com.") == "default");
  CHECK(target("orp.example.") == "example");  // labels, not characters
  CHECK(target(".") == "default");
  CHECK(table.domain_routes().size() == 3);
  CHECK(table.domain_routes()[1].target == "eng");  // the order given
}

TEST_CASE("A table without domains sends everything to the default route", "[upstream][routes]") {
  RouteTable<TestRoute> empty;
  CHECK(empty.Lookup(N("www.example.")).target.empty());
  RouteTable<TestRoute> only_default({}, {N("."), "default"});
  CHECK(only_default.Lookup(N("www.example.")).target == "default");
  CHECK_FALSE(only_default == empty);
}

TEST_CASE("A root domain route catches every name", "[upstream][routes]") {
  RouteTable<TestRoute> table({{N("."), "root"}, {N("a.example."), "a"}}, {N("."), "default"});
  CHECK(table.Lookup(N("www.example.")).target == "root");
  CHECK(table.Lookup(N("x.a.example.")).target == "a");
}

TEST_CASE("A domain given twice: the first route counts", "[upstream][routes]") {
  DomainIndex index;
  CHECK(index.Add(N("example."), 0));
  CHECK_FALSE(index.Add(N("EXAMPLE."), 1));
  CHECK(index.Find(N("www.example.")) == 0u);
  CHECK_FALSE(index.Find(N("www.example.com.")));
}

}  // namespace
}  // namespace kdns::upstream

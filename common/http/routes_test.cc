#include "common/http/routes.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::http {
namespace {

Handler Answer(const std::string& body) {
  return [body](const Request&) { return Response::Text(200, body); };
}

std::string Body(const Routes& routes, const std::string& path) {
  const Handler* handler = routes.Find(path);
  return handler == nullptr ? "<none>" : (*handler)(Request()).body;
}

TEST_CASE("A path finds its exact route first, else its longest prefix", "[http][routes]") {
  Routes routes;
  routes.Handle("/metrics", Answer("metrics"));
  routes.HandlePrefix("/debug", Answer("debug"));
  routes.HandlePrefix("/debug/top", Answer("top"));
  routes.Handle("/debug/exact", Answer("exact"));
  CHECK(Body(routes, "/metrics") == "metrics");
  CHECK(Body(routes, "/metrics/x") == "<none>");
  CHECK(Body(routes, "/debug/cache") == "debug");
  CHECK(Body(routes, "/debug/top-clients") == "top");
  CHECK(Body(routes, "/debug/exact") == "exact");
  CHECK(Body(routes, "/healthz") == "<none>");
}

TEST_CASE("A route registered again replaces the first", "[http][routes]") {
  Routes routes;
  routes.Handle("/healthz", Answer("old"));
  routes.Handle("/healthz", Answer("new"));
  CHECK(Body(routes, "/healthz") == "new");
}

}  // namespace
}  // namespace kdns::http

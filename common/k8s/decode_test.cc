// Status error bodies and /version decoded from the real API server's captured responses in
// test/fixtures/k8s-api/ (see its README). Lists: decode_list_test.cc; watch lines:
// decode_watch_test.cc.
#include "common/k8s/decode.h"

#include <catch2/catch.hpp>

#include "common/k8s/testing.h"

namespace kdns::k8s {
namespace {

using testing::ReadCapture;

TEST_CASE("Every error body decodes as a Status", "[k8s]") {
  auto [name, code, reason,
        message_start] = GENERATE(table<std::string, int, std::string, std::string>({
      {"05a-list-continue-bogus", 400, "BadRequest", "invalid continue token"},
      {"05a-list-continue-expired", 410, "Expired", "The provided continue parameter is too old"},
      {"05a-list-exact-rv-compacted", 410, "Expired",
       "The resourceVersion for the provided list is too old."},
      {"06-bad-token", 401, "Unauthorized", "Unauthorized"},
      {"06-notfound-object", 404, "NotFound", "services \"nope\" not found"},
      {"06-notfound-groupversion", 404, "NotFound", "the server could not find"},
      {"06-notfound-resource", 404, "NotFound", "the server could not find"},
      {"06-list-rv-not-a-number", 500, "", "resourceVersion: Invalid value: \"abc\""},
      {"06-watch-rv-not-a-number", 500, "", "resourceVersion: Invalid value: \"abc\""},
      {"06-list-rv-too-large", 504, "Timeout", "Timeout: Too large resource version"},
      {"07-list-services-match-without-rv", 422, "Invalid", "ListOptions.meta.k8s.io"},
  }));
  INFO(name);
  std::string body = ReadCapture(name);
  auto status = DecodeStatus(body);
  REQUIRE(status.ok());
  CHECK(status->code == code);
  CHECK(status->reason == reason);
  CHECK(status->status == "Failure");
  CHECK(status->message.starts_with(message_start));
  // Handed to the list decoder by mistake, it says what it is.
  auto list = DecodeList(body);
  REQUIRE_FALSE(list.ok());
  CHECK(list.error().starts_with("List: got a Status instead: " + std::to_string(code)));
}

TEST_CASE("Status bodies keep the details a client acts on", "[k8s]") {
  auto expired = DecodeStatus(ReadCapture("05a-list-continue-expired"));
  REQUIRE(expired.ok());
  CHECK(expired->continue_token ==
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiZGVmYXVsdC9kdWFsXHUwMDAwIn0");
  auto too_large = DecodeStatus(ReadCapture("06-list-rv-too-large"));
  REQUIRE(too_large.ok());
  CHECK(too_large->retry_after_seconds == 1);
  REQUIRE(too_large->causes.size() == 1);
  CHECK(too_large->causes[0].reason == "ResourceVersionTooLarge");
  auto invalid = DecodeStatus(ReadCapture("07-list-services-match-without-rv"));
  REQUIRE(invalid.ok());
  REQUIRE(invalid->causes.size() == 1);
  CHECK(invalid->causes[0].reason == "FieldValueForbidden");
  CHECK(invalid->causes[0].field == "resourceVersionMatch");
  auto not_found = DecodeStatus(ReadCapture("06-notfound-object"));
  REQUIRE(not_found.ok());
  CHECK(not_found->Summary() == "404 NotFound: services \"nope\" not found");
  CHECK_FALSE(not_found->retry_after_seconds.has_value());
}

TEST_CASE("The version document decodes, discovery documents are not lists", "[k8s]") {
  auto version = DecodeVersion(ReadCapture("08-version"));
  REQUIRE(version.ok());
  CHECK(version->git_version == "v1.25.0-k3s1");
  CHECK(version->major == "1");
  CHECK(version->minor == "25");
  CHECK(version->platform == "linux/amd64");
  CHECK(DecodeVersion("{}").error() == "version: gitVersion: missing");
  CHECK(DecodeVersion(R"({"gitVersion":1})").error() == "version: gitVersion: not a string: 1");
  CHECK(DecodeVersion("[]").error() == "version: not an object");

  CHECK(DecodeList(ReadCapture("08-discovery-group")).error() ==
        R"(List: unsupported kind "APIGroup")");
  CHECK(DecodeList(ReadCapture("08-discovery-v1")).error() ==
        R"(List: unsupported kind "APIResourceList")");
}

}  // namespace
}  // namespace kdns::k8s

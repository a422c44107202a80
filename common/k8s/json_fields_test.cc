#include "common/k8s/json_fields.h"

#include <catch2/catch.hpp>

namespace kdns::k8s::internal {
namespace {

TEST_CASE("Field paths render as dotted keys and bracketed indexes", "[k8s]") {
  const FieldPath root;
  CHECK(root.ToString().empty());
  FieldPath endpoints = root.Field("endpoints");
  FieldPath endpoint = endpoints.Index(2);
  FieldPath addresses = endpoint.Field("addresses");
  CHECK(addresses.Index(0).ToString() == "endpoints[2].addresses[0]");
  CHECK(root.Index(4).ToString() == "[4]");
}

TEST_CASE("Messages carry the kind, the object's name and the field path", "[k8s]") {
  ObjectMeta meta;
  Warnings warnings;
  FieldContext ctx(Kind::kEndpointSlice, &meta, &warnings, "items[3]");
  const FieldPath root;
  ctx.Warn(root.Field("addressType"), "before the name is known");
  meta.ns = "default";
  meta.name = "headless-abc12";
  CHECK_FALSE(ctx.Fail(root.Field("ports"), "first"));
  CHECK_FALSE(ctx.Fail(root.Field("endpoints"), "second"));
  CHECK(ctx.error() == "items[3]: EndpointSlice default/headless-abc12: ports: first");
  REQUIRE(warnings.messages().size() == 1);
  CHECK(warnings.messages()[0] == "items[3]: EndpointSlice: addressType: before the name is known");
}

TEST_CASE("Values in messages are quoted, escaped and cut short", "[k8s]") {
  CHECK(Quote("10.1.x") == "\"10.1.x\"");
  CHECK(Quote("a\"b\\c\n\xff") == "\"a\\\"b\\\\c\\x0a\\xff\"");
  CHECK(Quote(std::string(100, 'a')) == "\"" + std::string(64, 'a') + "\"...");
  JsonDocument json;
  const rapidjson::Document& doc = json.doc;
  std::string error;
  REQUIRE(
      ParseJson(R"([1, -2, 1.5, true, null, {}, [], "s", 18446744073709551615])", &json, &error));
  std::vector<std::string> described;
  for (const auto& value : doc.GetArray()) described.push_back(Describe(value));
  CHECK(described == std::vector<std::string>{"1", "-2", "1.5", "true", "null", "an object",
                                              "an array", "\"s\"", "18446744073709551615"});
}

TEST_CASE("Typed reads treat null as absent and reject wrong types", "[k8s]") {
  JsonDocument json;
  const rapidjson::Document& doc = json.doc;
  std::string error;
  REQUIRE(ParseJson(R"({"s": "x", "n": null, "i": 7, "big": 1e300, "b": true, "o": {}, "a": []})",
                    &json, &error));
  FieldContext ctx("test");
  const FieldPath root;
  std::string text = "unchanged";
  CHECK(ReadString(ctx, doc, "n", root, &text));
  CHECK(ReadString(ctx, doc, "absent", root, &text));
  CHECK(text == "unchanged");
  CHECK(ReadString(ctx, doc, "s", root, &text));
  CHECK(text == "x");
  std::optional<int64_t> number;
  CHECK(ReadInt(ctx, doc, "i", root, 0, 10, &number));
  CHECK(number == 7);
  const JsonValue* value = nullptr;
  CHECK(ReadObject(ctx, doc, "o", root, &value));
  CHECK(value != nullptr);
  CHECK(ReadArray(ctx, doc, "n", root, &value));
  CHECK(value == nullptr);
  CHECK(ctx.error().empty());

  SECTION("a string that is a number") {
    CHECK_FALSE(ReadString(ctx, doc, "i", root, &text));
    CHECK(ctx.error() == "test: i: not a string: 7");
  }
  SECTION("an integer out of range") {
    CHECK_FALSE(ReadInt(ctx, doc, "i", root, 0, 5, &number));
    CHECK(ctx.error() == "test: i: out of range: 7");
  }
  SECTION("a huge number") {
    CHECK_FALSE(ReadInt(ctx, doc, "big", root, 0, 5, &number));
    CHECK(ctx.error() == "test: big: out of range: 1.0000000000000001e+300");
  }
  SECTION("a boolean that is a string") {
    std::optional<bool> flag;
    CHECK_FALSE(ReadBool(ctx, doc, "s", root, &flag));
    CHECK(ctx.error() == "test: s: not a boolean: \"x\"");
  }
  SECTION("an array that is an object") {
    CHECK_FALSE(ReadArray(ctx, doc, "o", root, &value));
    CHECK(value == nullptr);
    CHECK(ctx.error() == "test: o: not an array: an object");
  }
}

TEST_CASE("JSON parsing reports the reason and offset and survives deep nesting", "[k8s]") {
  JsonDocument json;
  std::string error;
  CHECK_FALSE(ParseJson("{\"a\": }", &json, &error));
  CHECK(error == "not JSON: Invalid value. at offset 6");
  CHECK_FALSE(ParseJson("", &json, &error));
  CHECK_FALSE(ParseJson("{} {}", &json, &error));
  CHECK_FALSE(ParseJson("\"\xff\"", &json, &error));  // not UTF-8
  CHECK_FALSE(ParseJson(std::string_view("{}\0{", 4), &json, &error));
  CHECK(error == "not JSON: a NUL byte at offset 2");
  // A multi-byte sequence cut by the end of the text (an over-read in in-situ parsing).
  CHECK_FALSE(ParseJson("{\"a\":\"\xf0", &json, &error));
  CHECK_FALSE(ParseJson("[\"\xff\xff\xff", &json, &error));
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(ParseJson(deep, &json, &error));
  CHECK_FALSE(ParseJson(std::string(100000, '['), &json, &error));
}

}  // namespace
}  // namespace kdns::k8s::internal

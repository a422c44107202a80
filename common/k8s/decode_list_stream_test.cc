// ListStreamDecoder: the captured List bodies of a real API server fed in pieces cut at every
// size (and at random places) decode to exactly what DecodeList makes of the whole text; a
// body cut mid-item, text that is not JSON, bad and other items, member orders other than the
// API server's, and the per-item size bound.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/k8s/decode.h"
#include "common/k8s/testing.h"

namespace kdns::k8s {
namespace {

using testing::Key;
using testing::ReadCapture;
using testing::ReadFixture;

// The keys (ns/name@rv) of the objects of any kind, in order.
std::string KeyOf(const Object& object) {
  return std::visit(
      [](const auto& value) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::monostate>) {
          return "?";
        } else {
          return Key(value.meta);
        }
      },
      object);
}

struct Streamed {
  bool ok = false;
  std::string error;
  std::vector<std::string> keys;
  ListMeta meta;
  size_t bad_items = 0;
  size_t other_items = 0;
};

// Feeds `text` in pieces whose sizes `next_size` draws.
template <typename NextSize>
Streamed Stream(std::string_view text, NextSize next_size, uint64_t max_bytes = 1u << 20) {
  Streamed out;
  ListStreamDecoder decoder(
      [&](Object&& object) {
        out.keys.push_back(KeyOf(object));
        return true;
      },
      max_bytes);
  bool fed = true;
  while (!text.empty() && fed) {
    size_t size = std::min(text.size(), std::max<size_t>(1, next_size()));
    fed = decoder.Feed(text.substr(0, size));
    text.remove_prefix(size);
  }
  out.ok = fed && decoder.Finish();
  out.error = decoder.error();
  out.meta = decoder.meta();
  out.bad_items = decoder.bad_items();
  out.other_items = decoder.other_items();
  return out;
}

std::vector<std::string> WholeKeys(const ObjectList& list) {
  std::vector<std::string> keys;
  for (const auto& o : list.services) keys.push_back(Key(o.meta));
  for (const auto& o : list.endpoint_slices) keys.push_back(Key(o.meta));
  for (const auto& o : list.endpoints) keys.push_back(Key(o.meta));
  for (const auto& o : list.pods) keys.push_back(Key(o.meta));
  return keys;
}

TEST_CASE("a List fed in pieces of any size decodes like the whole text", "[k8s][stream]") {
  for (const char* name : {"01-list-services-p1", "01-list-services-p4", "02-list-endpointslices",
                           "07-list-services-rv0", "01x-list-services-p1-curl-useragent"}) {
    INFO(name);
    const std::string body = ReadCapture(name);
    auto whole = DecodeList(body);
    REQUIRE(whole.ok());
    for (size_t size :
         {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, size_t{4096}, body.size()}) {
      INFO("pieces of " << size);
      Streamed streamed = Stream(body, [&] { return size; });
      REQUIRE(streamed.ok);
      CHECK(streamed.keys == WholeKeys(*whole));
      CHECK(streamed.meta.resource_version.text == whole->meta.resource_version.text);
      CHECK(streamed.meta.continue_token == whole->meta.continue_token);
      CHECK(streamed.meta.remaining_item_count == whole->meta.remaining_item_count);
    }
    std::mt19937 engine(11);
    for (int round = 0; round < 20; ++round) {
      Streamed streamed = Stream(body, [&] { return engine() % 300; });
      REQUIRE(streamed.ok);
      CHECK(streamed.keys == WholeKeys(*whole));
    }
  }
}

TEST_CASE("the conformance objects file (kubectl's member order) streams too", "[k8s][stream]") {
  // kubectl writes apiVersion, items, kind, metadata: the items come before the kind.
  const std::string body = ReadFixture("conformance/objects.json");
  auto whole = DecodeList(body);
  REQUIRE(whole.ok());
  Streamed streamed = Stream(body, [] { return 100; });
  INFO(streamed.error);
  REQUIRE(streamed.ok);
  // DecodeList groups a mixed List by kind; the stream keeps the file's order.
  std::vector<std::string> expected = WholeKeys(*whole);
  std::sort(expected.begin(), expected.end());
  std::sort(streamed.keys.begin(), streamed.keys.end());
  CHECK(streamed.keys == expected);
  CHECK(streamed.other_items == whole->other_items);
}

TEST_CASE("items before the list's kind are handed over at once when they name their kind",
          "[k8s][stream]") {
  // kubectl's order: holding these until the kind came would hold the whole file.
  const std::string named =
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"spec":{"clusterIP":"10.0.0.1"}})";
  const std::string unnamed =
      R"({"metadata":{"name":"b","namespace":"n","resourceVersion":"6"},"spec":{"clusterIP":"10.0.0.2"}})";
  std::vector<std::string> keys;
  ListStreamDecoder decoder(
      [&](Object&& object) {
        keys.push_back(KeyOf(object));
        return true;
      },
      1 << 20);
  REQUIRE(decoder.Feed(R"({"apiVersion":"v1","items":[)" + named + "," + unnamed));
  CHECK(keys == std::vector<std::string>{"n/a@5"});  // the unnamed one waits for the kind
  SECTION("a mixed List") {
    REQUIRE(decoder.Feed("," + named + R"(],"kind":"List","metadata":{}})"));
    REQUIRE(decoder.Finish());
    // The unnamed item has no kind in a mixed List: bad, as DecodeList has it.
    CHECK(keys == std::vector<std::string>{"n/a@5", "n/a@5"});
    CHECK(decoder.bad_items() == 1);
    CHECK(decoder.warnings().messages().front().rfind("items[1]: ", 0) == 0);
  }
  SECTION("a typed list of the same kind") {
    REQUIRE(decoder.Feed(R"(],"kind":"ServiceList","metadata":{}})"));
    REQUIRE(decoder.Finish());
    CHECK(keys == std::vector<std::string>{"n/a@5", "n/b@6"});
    CHECK(decoder.bad_items() == 0);
  }
  SECTION("a typed list of another kind fails") {
    CHECK_FALSE(decoder.Feed(R"(],"kind":"PodList","metadata":{}})"));
    CHECK(decoder.error() == "List: an item of kind Service before the kind of a PodList");
  }
}

TEST_CASE("a List body cut anywhere before its end fails at Finish", "[k8s][stream]") {
  const std::string body = ReadCapture("01-list-services-p1");
  for (size_t cut = 0; cut + 1 < body.size(); cut += 37) {
    INFO("cut at " << cut);
    Streamed streamed = Stream(body.substr(0, cut), [] { return 50; });
    CHECK_FALSE(streamed.ok);
    CHECK(streamed.error.rfind("List: ", 0) == 0);
  }
  Streamed mid = Stream(body.substr(0, body.size() / 2), [] { return 50; });
  CHECK(mid.error.find("not JSON: the body ended inside the list") != std::string::npos);
  CHECK(mid.error.find("(in items[") != std::string::npos);
}

TEST_CASE("a streamed List: bad items are skipped, broken JSON fails", "[k8s][stream]") {
  const std::string head =
      R"({"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[)";
  const std::string good =
      R"({"metadata":{"name":"a","namespace":"n","resourceVersion":"5"},"spec":{"clusterIP":"10.0.0.1"}})";
  SECTION("an item that does not decode is skipped and counted") {
    Streamed s =
        Stream(head + good + R"(,{"metadata":{"name":7}},"text",)" + good + "]}", [] { return 5; });
    REQUIRE(s.ok);
    CHECK(s.keys == std::vector<std::string>{"n/a@5", "n/a@5"});
    CHECK(s.bad_items == 2);
    CHECK(s.meta.resource_version.text == "9");
  }
  SECTION("an item that is not JSON fails the list") {
    Streamed s = Stream(head + good + R"(,{"metadata":{"name":"b",}}]})", [] { return 5; });
    CHECK_FALSE(s.ok);
    CHECK(s.error.find("List: items[1]: not JSON") == 0);
    CHECK(s.keys.size() == 1);  // what came before was delivered
  }
  SECTION("braces and quotes inside strings do not end an item") {
    Streamed s = Stream(
        head +
            R"({"metadata":{"name":"x","namespace":"n","resourceVersion":"1","annotations":{"a":"}]\"{["}},"spec":{"clusterIP":"10.0.0.2"}}]})",
        [] { return 3; });
    REQUIRE(s.ok);
    CHECK(s.keys == std::vector<std::string>{"n/x@1"});
  }
  SECTION("an item larger than the bound fails the list") {
    Streamed s = Stream(
        head + good + "]}", [] { return 8; }, 40);
    CHECK_FALSE(s.ok);
    CHECK(s.error == "List: items[0] longer than 40 bytes");
  }
  SECTION("a trailing comma, text after the end, a Status, an unknown kind") {
    CHECK(Stream(head + good + ",]}", [] { return 4; }).error.find("expected an item") !=
          std::string::npos);
    CHECK(Stream(head + "]} x", [] { return 4; }).error.find("text after the end") !=
          std::string::npos);
    CHECK(Stream(R"({"kind":"Status","apiVersion":"v1","items":[{}]})", [] { return 4; }).error ==
          "List: got a Status instead");
    CHECK(Stream(R"({"kind":"NodeList","items":[]})", [] { return 4; }).error ==
          "List: unsupported kind \"NodeList\"");
    CHECK(Stream(R"([1,2])", [] { return 4; }).error.find("not JSON object") != std::string::npos);
  }
  SECTION("on_item may stop the decoder") {
    int calls = 0;
    ListStreamDecoder decoder([&](Object&&) { return ++calls < 1; }, 1 << 20);
    CHECK_FALSE(decoder.Feed(head + good + "," + good + "]}"));
    CHECK(decoder.error().empty());
    CHECK(calls == 1);
  }
}

}  // namespace
}  // namespace kdns::k8s

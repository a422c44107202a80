#include <catch2/catch.hpp>
#include <regex>
#include <string>
#include <vector>

#include "common/k8s/decode.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "kubedns/records/cache_dump.h"
#include "kubedns/sources/objects_file_source.h"
#include "kubedns/sources/objects_file_source_testing.h"

// How a good file is applied: checked whole first, then applied with publishes along the
// way; and what happens when the file changes between the two passes. What a file's content
// does is objects_file_source_content_test.cc.
namespace kdns::kubedns {
namespace {

using namespace testing;

// `count` services in two namespaces, each with one slice of one endpoint; `shift` moves
// every cluster IP and endpoint address (a reload that changes every object).
std::string Cluster(int count, int shift) {
  std::vector<std::string> items;
  for (int i = 0; i < count; ++i) {
    const std::string ns = i % 2 == 0 ? "default" : "shop";
    const std::string name = "svc-" + std::to_string(i);
    const int n = i + shift * 100;
    items.push_back(ServiceItem(
        ns, name, "10.96." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1)));
    items.push_back(
        SliceItem(ns, name, "10.0." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1)));
  }
  return List(items);
}

// The snapshot's /cache view without its generation, which differs between two histories.
std::string Content(const std::shared_ptr<const Snapshot>& snapshot) {
  return std::regex_replace(CacheJson(snapshot.get()), std::regex("\"generation\": *[0-9]+"), "");
}

// What a fresh writer makes of `text` in one load.
std::shared_ptr<const Snapshot> FreshLoad(const std::string& text) {
  auto list = k8s::DecodeList(text);
  REQUIRE(list.ok());
  RecordTreeWriter writer;
  RecordTreeWriter::ObjectSet set;
  set.services = std::move(list->services);
  set.slices = std::move(list->endpoint_slices);
  writer.ReplaceAll(set);
  return writer.Publish();
}

std::string Ptr(const Snapshot& snapshot, const char* ip) {
  std::string target;
  snapshot.ForEachPtr(*IpAddress::Parse(ip), [&](std::string_view name) { target = name; });
  return target;
}

TEST_CASE("A reload that changes every object publishes along the way and ends as a fresh load",
          "[objects_file][kubedns]") {
  ObjectsFileTest<WriterSink> f(/*list_publish_bytes=*/1);  // due after every changed object
  WriteInPlace(f.path, Cluster(40, 0));
  ObjectsFileSource& source = f.Start();
  REQUIRE(source.stats().reloads_ok == 1);
  const auto before = f.sink.snapshot;
  f.sink.publishes_during_loads = 0;

  const std::string changed = Cluster(30, 1);  // every address moved, 10 services gone
  WriteByRename(f.path, changed);
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_ok == 2; }));
  CHECK(f.sink.publishes_during_loads > 1);
  CHECK(f.sink.snapshot->generation() > before->generation() + 1);
  CHECK(Content(f.sink.snapshot) == Content(FreshLoad(changed)));
  CHECK(f.sink.snapshot->stats().reverse_entries == FreshLoad(changed)->stats().reverse_entries);
  CHECK(Ptr(*f.sink.snapshot, "10.96.0.101") == "svc-0.default");
  CHECK(Ptr(*f.sink.snapshot, "10.96.0.1").empty());
  CHECK(f.sink.snapshot->FindService("shop", "svc-39") == nullptr);
}

TEST_CASE("A file rewritten in place into a bad one between the passes: what was applied stays",
          "[objects_file][kubedns]") {
  ObjectsFileTest<WriterSink> f;
  const std::string first = List(
      {ServiceItem("default", "web", "10.96.1.1"), ServiceItem("default", "api", "10.96.1.2")});
  WriteInPlace(f.path, first);
  ObjectsFileSource& source = f.Start();
  REQUIRE(source.stats().reloads_ok == 1);

  const std::string late = ServiceItem("default", "late", "10.96.9.3");
  const std::string full = List({ServiceItem("default", "web", "10.96.9.1"),
                                 ServiceItem("default", "new", "10.96.9.2"), late});
  const std::string cut = full.substr(0, full.size() - late.size() / 2);
  bool rewritten = false;
  f.sink.on_begin_load = [&] {
    if (rewritten) return;
    rewritten = true;
    WriteInPlace(f.path, cut);  // the inode the source has open
  };
  WriteByRename(f.path, List({ServiceItem("default", "web", "10.96.5.1")}));  // good when checked
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_failed == 1; }));
  CHECK(rewritten);
  CHECK(f.sink.aborted_loads == 1);
  INFO("last error: " << source.stats().last_error);
  CHECK(source.stats().last_error.find("not applied whole") != std::string::npos);
  // The cut file's whole items were applied; nothing was deleted.
  const auto mixed = f.sink.snapshot;
  CHECK(Ptr(*mixed, "10.96.9.1") == "web.default");
  CHECK(mixed->FindService("default", "new") != nullptr);
  CHECK(mixed->FindService("default", "api") != nullptr);
  CHECK(mixed->FindService("default", "late") == nullptr);

  // The rewrite's own event reads the cut file again, from scratch: it is bad, not applied.
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_failed == 2; }));
  CHECK(f.sink.aborted_loads == 1);
  CHECK(f.sink.snapshot == mixed);

  WriteByRename(f.path, full);
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_ok == 2; }));
  CHECK(Content(f.sink.snapshot) == Content(FreshLoad(full)));
  CHECK(f.sink.snapshot->FindService("default", "api") == nullptr);
}

TEST_CASE("A file rewritten in place into another good List between the passes: that is applied",
          "[objects_file][kubedns]") {
  ObjectsFileTest<WriterSink> f;
  WriteInPlace(f.path, kTwoServices);
  ObjectsFileSource& source = f.Start();
  const std::string second = List(
      {ServiceItem("default", "web", "10.96.9.1"), ServiceItem("default", "new", "10.96.9.2")});
  bool rewritten = false;
  f.sink.on_begin_load = [&] {
    if (rewritten) return;
    rewritten = true;
    WriteInPlace(f.path, second);
  };
  WriteByRename(f.path, kOneService);
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_ok == 2; }));
  CHECK(rewritten);
  CHECK(f.sink.aborted_loads == 0);
  CHECK(Content(f.sink.snapshot) == Content(FreshLoad(second)));
  // The rewrite's event finds the content it applied: not applied again.
  REQUIRE(f.WaitFor([&] { return source.stats().unchanged >= 1; }));
  CHECK(source.stats().reloads_ok == 2);
  CHECK(source.stats().reloads_failed == 0);
}

TEST_CASE("A file replaced by a rename between the passes: the checked one, then the new one",
          "[objects_file][kubedns]") {
  ObjectsFileTest<WriterSink> f;
  WriteInPlace(f.path, kOneService);
  ObjectsFileSource& source = f.Start();
  const std::string checked = kTwoServices;
  const std::string replacement = List({ServiceItem("default", "other", "10.96.7.7")});
  bool replaced = false;
  f.sink.on_begin_load = [&] {
    if (replaced) return;
    replaced = true;
    WriteByRename(f.path, replacement);  // a new inode; the source reads the one it opened
  };
  WriteByRename(f.path, checked);
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_ok == 2; }));
  CHECK(replaced);
  CHECK(Content(f.sink.snapshot) == Content(FreshLoad(checked)));
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_ok == 3; }));
  CHECK(Content(f.sink.snapshot) == Content(FreshLoad(replacement)));
  CHECK(f.sink.aborted_loads == 0);
}

}  // namespace
}  // namespace kdns::kubedns

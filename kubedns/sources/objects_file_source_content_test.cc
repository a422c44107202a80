// clang-format off
// glog (through objects_file_source.h) and Catch both define CHECK, and the last definition
// wins: glog first, so that the tests' CHECKs are Catch's.
#include "kubedns/sources/objects_file_source.h"
// clang-format on

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "kubedns/sources/objects_file_source_testing.h"

// What a file's content does: broken or missing files keep the last good set, bad items are
// skipped and counted, the metrics, the shipped files. How changes are noticed is
// objects_file_source_test.cc.
namespace kdns::kubedns {
namespace {

using namespace testing;

TEST_CASE("A broken file keeps the last good set and counts an error, then a fixed file applies",
          "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kTwoServices);
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    REQUIRE(sink.loads == 1);

    std::string reason;
    SECTION("not JSON") {
      WriteInPlace(path, R"({"kind":"List","items":[)");
      reason = "JSON";
    }
    SECTION("cut short mid-item") {
      WriteInPlace(path, kTwoServices.substr(0, kTwoServices.size() / 2));
      reason = "JSON";
    }
    SECTION("not a List") {
      WriteByRename(path, R"({"apiVersion":"v1","kind":"ConfigMap","data":{}})");
      reason = "ConfigMap";
    }
    SECTION("every item bad") {
      WriteByRename(path, List({BadItem(), BadItem()}));
      reason = "none of its 2 items decoded";
    }
    SECTION("removed") {
      REQUIRE(unlink(path.c_str()) == 0);
      reason = "No such file or directory";
    }
    SECTION("a directory in its place") {
      REQUIRE(unlink(path.c_str()) == 0);
      REQUIRE(mkdir(path.c_str(), 0755) == 0);
      reason = "not a regular file";  // open(2) of a directory read-only succeeds
    }
    REQUIRE(WaitFor(loop, [&] { return source.stats().reloads_failed == 1; }));
    CHECK(sink.loads == 1);  // the last good set stays
    // The validating pass stopped it: the sink saw nothing of the bad file.
    CHECK(sink.aborted_loads == 0);
    CHECK(sink.calls == std::vector<std::string>{"BeginLoad", "EndLoad", "Synced"});
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});
    INFO("last error: " << source.stats().last_error);
    CHECK(source.stats().last_error.find(reason) != std::string::npos);
    CHECK_FALSE(source.stats().last_error.empty());

    std::error_code ignored;
    std::filesystem::remove(path, ignored);  // the directory case
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
    CHECK(source.stats().reloads_failed == 1);
    CHECK(sink.synced == 1);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("A bad file after a good one never reaches the records: they stay the last good set's",
          "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  const std::string good =
      List({ServiceItem("default", "web", "10.96.1.1"), SliceItem("default", "web", "10.0.0.1"),
            EndpointsItem("shop", "cart", "10.0.1.1"), ServiceItem("shop", "cart", "10.96.1.2"),
            PodItem("default", "web-0", "10.0.0.1")});
  WriteInPlace(path, good);
  loop::Loop loop;
  {
    metrics::Registry registry;
    WriterSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    REQUIRE(sink.snapshot != nullptr);
    const auto loaded = sink.snapshot;
    REQUIRE(loaded->stats().services == 2);
    REQUIRE(loaded->stats().endpoints == 2);

    // Each bad file changes, adds and drops objects before it turns out bad.
    const std::string changed = ServiceItem("default", "web", "10.96.9.1") + "," +
                                SliceItem("default", "web", "10.0.9.1") + "," +
                                ServiceItem("default", "new", "10.96.9.2") + "," +
                                PodItem("default", "web-0", "10.0.9.1");
    const std::string head = R"({"apiVersion":"v1","kind":"List","items":[)";
    std::string bad;
    std::string reason;
    SECTION("cut short in the middle of an item") {
      const std::string next = ServiceItem("default", "late", "10.96.9.3");
      bad = head + changed + "," + next.substr(0, next.size() / 2);
      reason = "ended inside the list";
    }
    SECTION("broken JSON after good items") {
      bad = head + changed + R"(,{"kind":"Service",]})";
      reason = "not JSON";
    }
    SECTION("a typed list whose kind comes after items of another kind") {
      bad = R"({"apiVersion":"v1","items":[)" + changed + R"(],"kind":"PodList"})";
      reason = "before the kind of a PodList";
    }
    WriteByRename(path, bad);
    REQUIRE(WaitFor(loop, [&] { return source.stats().reloads_failed == 1; }));
    INFO("last error: " << source.stats().last_error);
    CHECK(source.stats().last_error.find(reason) != std::string::npos);
    CHECK(sink.aborted_loads == 0);
    CHECK(sink.snapshot == loaded);  // nothing published since
    const auto kept = sink.snapshot;
    for (const auto& [ns, name] :
         std::vector<std::pair<std::string, std::string>>{{"default", "web"}, {"shop", "cart"}}) {
      INFO(ns << "/" << name);
      CHECK(kept->FindService(ns, name) == loaded->FindService(ns, name));  // the same records
    }
    CHECK(kept->FindService("default", "new") == nullptr);
    CHECK(kept->stats().services == 2);
    CHECK(kept->stats().endpoints == 2);
    CHECK(kept->HasPodIp("default", *IpAddress::Parse("10.0.0.1")));
    CHECK_FALSE(kept->HasPodIp("default", *IpAddress::Parse("10.0.9.1")));

    // The next good file applies over the last good set, in kubectl's member order.
    WriteByRename(path, R"({"apiVersion":"v1","items":[)" + changed + R"(],"kind":"List"})");
    REQUIRE(WaitFor(loop, [&] { return source.stats().reloads_ok == 2; }));
    CHECK(sink.snapshot->FindService("default", "new") != nullptr);
    CHECK(sink.snapshot->FindService("shop", "cart") == nullptr);
    CHECK(sink.snapshot->stats().endpoints == 1);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("After a failed read the same good content is applied again", "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kOneService);
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    REQUIRE(unlink(path.c_str()) == 0);
    REQUIRE(WaitFor(loop, [&] { return source.stats().reloads_failed == 1; }));
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
    CHECK(source.stats().reloads_ok == 2);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("A file missing at start is not synced, counts an error, and is applied once it appears",
          "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    CHECK(sink.calls.empty());
    CHECK_FALSE(source.stats().synced);
    CHECK(source.stats().reloads_failed == 1);
    CHECK(source.stats().last_error.find("No such file or directory") != std::string::npos);

    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.synced == 1; }));
    CHECK(sink.calls == std::vector<std::string>{"BeginLoad", "EndLoad", "Synced"});
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
    CHECK(source.stats().reloads_failed == 1);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("Bad items inside a good List are skipped and counted; the rest is applied",
          "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, List({ServiceItem("default", "web", "10.96.1.1"), BadItem(),
                           SliceItem("default", "web", "10.244.0.5"),
                           EndpointsItem("default", "legacy", "10.244.0.9"),
                           PodItem("default", "web-0", "10.244.0.5"), BadItem()}));
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    REQUIRE(sink.loads == 1);
    CHECK(sink.synced == 1);
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
    CHECK(sink.last.slices.size() == 1);
    REQUIRE(sink.last.endpoints.size() == 1);
    CHECK(sink.last.endpoints[0].meta.name == "legacy");
    REQUIRE(sink.pods.size() == 1);  // passed beside the ObjectSet
    CHECK(sink.pods[0].meta.name == "web-0");
    CHECK(source.stats().bad_items == 2);
    CHECK(source.stats().reloads_ok == 1);
    CHECK(source.stats().reloads_failed == 0);

    // Counted per applied reload.
    WriteByRename(path, List({ServiceItem("default", "web", "10.96.1.1"), BadItem()}));
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
    CHECK(source.stats().bad_items == 3);
    CHECK(sink.pods.empty());
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("An empty List is a valid, empty cluster", "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kOneService);
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    WriteByRename(path, List({}));
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
    CHECK(sink.last.services.empty());
    CHECK(source.stats().reloads_failed == 0);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("The metrics families render with the reload results and object counts",
          "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, List({ServiceItem("default", "web", "10.96.1.1"),
                           ServiceItem("shop", "cart", "10.96.1.2"),
                           SliceItem("default", "web", "10.244.0.5"),
                           EndpointsItem("default", "legacy", "10.244.0.9"),
                           PodItem("default", "web-0", "10.244.0.5"), BadItem()}));
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));

    // Registered at construction: zero before the first load.
    std::string before = registry.Render();
    CHECK_THAT(before, Catch::Contains("kdns_objects_file_reloads_total{result=\"ok\"} 0"));
    CHECK_THAT(before, Catch::Contains("kdns_objects_file_last_success_timestamp_seconds 0"));

    source.Start();
    WriteByRename(path, "not json");
    REQUIRE(WaitFor(loop, [&] { return source.stats().reloads_failed == 1; }));

    std::string text = registry.Render();
    INFO(text);
    CHECK_THAT(text, Catch::Contains("# TYPE kdns_objects_file_reloads_total counter"));
    CHECK_THAT(text, Catch::Contains("kdns_objects_file_reloads_total{result=\"ok\"} 1"));
    CHECK_THAT(text, Catch::Contains("kdns_objects_file_reloads_total{result=\"error\"} 1"));
    CHECK_THAT(text,
               Catch::Contains("# TYPE kdns_objects_file_last_success_timestamp_seconds gauge"));
    CHECK_THAT(text, Catch::Contains("# TYPE kdns_objects_file_objects gauge"));
    CHECK_THAT(text, Catch::Contains("kdns_objects_file_objects{kind=\"service\"} 2"));
    CHECK_THAT(text, Catch::Contains("kdns_objects_file_objects{kind=\"endpointslice\"} 1"));
    CHECK_THAT(text, Catch::Contains("kdns_objects_file_objects{kind=\"endpoints\"} 1"));
    CHECK_THAT(text, Catch::Contains("kdns_objects_file_objects{kind=\"pod\"} 1"));
    CHECK_THAT(text, Catch::Contains("# TYPE kdns_objects_file_bad_items_total counter"));
    CHECK_THAT(text, Catch::Contains("kdns_objects_file_bad_items_total 1"));
    CHECK_THAT(text, !Catch::Contains("kdns_objects_file_last_success_timestamp_seconds 0\n"));
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("The demo cluster file decodes with no bad items and loads as a whole",
          "[objects_file][demo]") {
  const std::string path = "kubedns/demo-cluster.json";
  auto list = k8s::DecodeList(ReadAll(path));
  REQUIRE(list.ok());
  INFO((list->warnings.messages().empty() ? "" : list->warnings.messages().front()));
  CHECK(list->bad_items == 0);
  CHECK(list->other_items == 0);
  CHECK(list->warnings.empty());
  CHECK(list->services.size() >= 20);
  CHECK(list->services.size() <= 30);

  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    REQUIRE(sink.synced == 1);
    CHECK(source.stats().bad_items == 0);

    RecordTreeWriter writer;
    writer.ReplaceAll(sink.last);
    auto snapshot = writer.Publish();
    for (const auto& [ns, name] :
         std::vector<std::pair<std::string, std::string>>{{"default", "kubernetes"},
                                                          {"kube-system", "kube-dns"},
                                                          {"shop", "frontend"},
                                                          {"shop", "redis"},
                                                          {"shop", "postgres"},
                                                          {"monitoring", "prometheus"}}) {
      INFO(ns << "/" << name);
      CHECK(snapshot->FindService(ns, name) != nullptr);
    }
  }
  loop::testing::RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::kubedns

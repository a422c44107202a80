#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "kubedns/sources/objects_file_source.h"
#include "kubedns/sources/objects_file_source_testing.h"

// What a file's content does: broken or missing files keep the last good set, bad items are
// skipped and counted, the metrics, the shipped files. How changes are noticed is
// objects_file_source_test.cc.
namespace kdns::kubedns {
namespace {

using namespace testing;

TEST_CASE("A broken file keeps the last good set and counts an error, then a fixed file applies",
          "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kTwoServices);
  ObjectsFileSource& source = f.Start();
  REQUIRE(f.sink.loads == 1);

  std::string reason;
  SECTION("not JSON") {
    WriteInPlace(f.path, R"({"kind":"List","items":[)");
    reason = "JSON";
  }
  SECTION("cut short mid-item") {
    WriteInPlace(f.path, kTwoServices.substr(0, kTwoServices.size() / 2));
    reason = "JSON";
  }
  SECTION("not a List") {
    WriteByRename(f.path, R"({"apiVersion":"v1","kind":"ConfigMap","data":{}})");
    reason = "ConfigMap";
  }
  SECTION("every item bad") {
    WriteByRename(f.path, List({BadItem(), BadItem()}));
    reason = "none of its 2 items decoded";
  }
  SECTION("removed") {
    REQUIRE(unlink(f.path.c_str()) == 0);
    reason = "No such file or directory";
  }
  SECTION("a directory in its place") {
    REQUIRE(unlink(f.path.c_str()) == 0);
    REQUIRE(mkdir(f.path.c_str(), 0755) == 0);
    reason = "not a regular file";  // open(2) of a directory read-only succeeds
  }
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_failed == 1; }));
  CHECK(f.sink.loads == 1);  // the last good set stays
  // The validating pass stopped it: the f.sink saw nothing of the bad file.
  CHECK(f.sink.aborted_loads == 0);
  CHECK(f.sink.calls ==
        std::vector<std::string>{"BeginLoad", "EndLoad", "McsSynced", "KubesliceSynced", "Synced"});
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});
  INFO("last error: " << source.stats().last_error);
  CHECK(source.stats().last_error.find(reason) != std::string::npos);
  CHECK_FALSE(source.stats().last_error.empty());

  std::error_code ignored;
  std::filesystem::remove(f.path, ignored);  // the directory case
  WriteByRename(f.path, kOneService);
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web"});
  CHECK(source.stats().reloads_failed == 1);
  CHECK(f.sink.synced == 1);
}

TEST_CASE("A bad file after a good one never reaches the records: they stay the last good set's",
          "[objects_file]") {
  ObjectsFileTest<WriterSink> f;
  const std::string good =
      List({ServiceItem("default", "web", "10.96.1.1"), SliceItem("default", "web", "10.0.0.1"),
            EndpointsItem("shop", "cart", "10.0.1.1"), ServiceItem("shop", "cart", "10.96.1.2"),
            PodItem("default", "web-0", "10.0.0.1")});
  WriteInPlace(f.path, good);
  ObjectsFileSource& source = f.Start();
  REQUIRE(f.sink.snapshot != nullptr);
  const auto loaded = f.sink.snapshot;
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
  WriteByRename(f.path, bad);
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_failed == 1; }));
  INFO("last error: " << source.stats().last_error);
  CHECK(source.stats().last_error.find(reason) != std::string::npos);
  CHECK(f.sink.aborted_loads == 0);
  CHECK(f.sink.snapshot == loaded);  // nothing published since
  const auto kept = f.sink.snapshot;
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
  WriteByRename(f.path, R"({"apiVersion":"v1","items":[)" + changed + R"(],"kind":"List"})");
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_ok == 2; }));
  CHECK(f.sink.snapshot->FindService("default", "new") != nullptr);
  CHECK(f.sink.snapshot->FindService("shop", "cart") == nullptr);
  CHECK(f.sink.snapshot->stats().endpoints == 1);
}

TEST_CASE("After a failed read the same good content is applied again", "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kOneService);
  ObjectsFileSource& source = f.Start();
  REQUIRE(unlink(f.path.c_str()) == 0);
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_failed == 1; }));
  WriteByRename(f.path, kOneService);
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(source.stats().reloads_ok == 2);
}

TEST_CASE("A file missing at start is not synced, counts an error, and is applied once it appears",
          "[objects_file]") {
  ObjectsFileTest f;
  ObjectsFileSource& source = f.Start();
  CHECK(f.sink.calls.empty());
  CHECK_FALSE(source.stats().synced);
  CHECK(source.stats().reloads_failed == 1);
  CHECK(source.stats().last_error.find("No such file or directory") != std::string::npos);

  WriteByRename(f.path, kOneService);
  REQUIRE(f.WaitFor([&] { return f.sink.synced == 1; }));
  CHECK(f.sink.calls ==
        std::vector<std::string>{"BeginLoad", "EndLoad", "McsSynced", "KubesliceSynced", "Synced"});
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web"});
  CHECK(source.stats().reloads_failed == 1);
}

TEST_CASE("Bad items inside a good List are skipped and counted; the rest is applied",
          "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, List({ServiceItem("default", "web", "10.96.1.1"), BadItem(),
                             SliceItem("default", "web", "10.244.0.5"),
                             EndpointsItem("default", "legacy", "10.244.0.9"),
                             PodItem("default", "web-0", "10.244.0.5"), BadItem()}));
  ObjectsFileSource& source = f.Start();
  REQUIRE(f.sink.loads == 1);
  CHECK(f.sink.synced == 1);
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web"});
  CHECK(f.sink.last.slices.size() == 1);
  REQUIRE(f.sink.last.endpoints.size() == 1);
  CHECK(f.sink.last.endpoints[0].meta.name == "legacy");
  REQUIRE(f.sink.last_pods.size() == 1);  // passed beside the ObjectSet
  CHECK(f.sink.last_pods[0].meta.name == "web-0");
  CHECK(source.stats().bad_items == 2);
  CHECK(source.stats().reloads_ok == 1);
  CHECK(source.stats().reloads_failed == 0);

  // Counted per applied reload.
  WriteByRename(f.path, List({ServiceItem("default", "web", "10.96.1.1"), BadItem()}));
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(source.stats().bad_items == 3);
  CHECK(f.sink.last_pods.empty());
}

TEST_CASE("An empty List is a valid, empty cluster", "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kOneService);
  ObjectsFileSource& source = f.Start();
  WriteByRename(f.path, List({}));
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(f.sink.last.services.empty());
  CHECK(source.stats().reloads_failed == 0);
}

TEST_CASE("The metrics families render with the reload results and object counts",
          "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, List({ServiceItem("default", "web", "10.96.1.1"),
                             ServiceItem("shop", "cart", "10.96.1.2"),
                             SliceItem("default", "web", "10.244.0.5"),
                             EndpointsItem("default", "legacy", "10.244.0.9"),
                             PodItem("default", "web-0", "10.244.0.5"), BadItem()}));
  ObjectsFileSource& source = f.Make(InotifyOnly(f.path));

  // Registered at construction: zero before the first load.
  std::string before = f.registry.Render();
  CHECK_THAT(before, Catch::Contains("kdns_objects_file_reloads_total{result=\"ok\"} 0"));
  CHECK_THAT(before, Catch::Contains("kdns_objects_file_last_success_timestamp_seconds 0"));

  source.Start();
  WriteByRename(f.path, "not json");
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_failed == 1; }));

  std::string text = f.registry.Render();
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

TEST_CASE("The demo cluster file decodes with no bad items and loads as a whole",
          "[objects_file][demo]") {
  const std::string path = "kubedns/demo-cluster.json";
  auto list = k8s::DecodeList(ReadFile(path));
  REQUIRE(list.ok());
  INFO((list->warnings.messages().empty() ? "" : list->warnings.messages().front()));
  CHECK(list->bad_items == 0);
  CHECK(list->other_items == 0);
  CHECK(list->warnings.empty());
  CHECK(list->services.size() >= 20);
  CHECK(list->services.size() <= 30);

  ObjectsFileTest f;
  ObjectsFileSource& source = f.Start(InotifyOnly(path));
  REQUIRE(f.sink.synced == 1);
  CHECK(source.stats().bad_items == 0);

  RecordTreeWriter writer;
  writer.ReplaceAll(f.sink.last);
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

}  // namespace
}  // namespace kdns::kubedns

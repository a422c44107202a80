#include "kubedns/objects_file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "common/k8s/decode.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "kubedns/record_tree.h"
#include "test/unit/temp_dir.h"

namespace kdns::kubedns {
namespace {

using kdns::testing::TempDir;

// Waits stay far above what the work needs; RunUntil returns as soon as it is done.
constexpr int kWaitMs = 5000;
// Long enough that only inotify can notice a change during a test.
constexpr uint64_t kNoPollMs = 3'600'000;

// Records what the source delivers, in order.
class RecordingSink final : public RecordSink {
 public:
  void ReplaceAll(RecordTreeWriter::ObjectSet objects) override {
    calls.push_back("ReplaceAll");
    ++replace_all;
    last = std::move(objects);
  }
  void ReplacePods(std::vector<k8s::Pod> new_pods) override {
    calls.push_back("ReplacePods");
    pods = std::move(new_pods);
  }
  void ReplaceServices(std::vector<k8s::Service>) override { calls.push_back("ReplaceServices"); }
  void ReplaceSlices(std::vector<k8s::EndpointSlice>) override { calls.push_back("ReplaceSlices"); }
  void ReplaceEndpoints(std::vector<k8s::Endpoints>) override {
    calls.push_back("ReplaceEndpoints");
  }
  void UpsertService(const k8s::Service&) override { calls.push_back("UpsertService"); }
  void DeleteService(std::string_view, std::string_view) override {
    calls.push_back("DeleteService");
  }
  void UpsertSlice(const k8s::EndpointSlice&) override { calls.push_back("UpsertSlice"); }
  void DeleteSlice(std::string_view, std::string_view) override { calls.push_back("DeleteSlice"); }
  void UpsertEndpoints(const k8s::Endpoints&) override { calls.push_back("UpsertEndpoints"); }
  void DeleteEndpoints(std::string_view, std::string_view) override {
    calls.push_back("DeleteEndpoints");
  }
  void Synced() override {
    calls.push_back("Synced");
    ++synced;
  }

  // "ns/name" of the services of the last complete set, sorted.
  std::vector<std::string> ServiceNames() const {
    std::vector<std::string> names;
    for (const auto& service : last.services) {
      names.push_back(service.meta.ns + "/" + service.meta.name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::vector<std::string> calls;
  int replace_all = 0;
  int synced = 0;
  RecordTreeWriter::ObjectSet last;
  std::vector<k8s::Pod> pods;
};

// Truncates and rewrites the file (same inode): IN_CLOSE_WRITE.
void WriteInPlace(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  REQUIRE(out.good());
}

// Writes a temporary file next to it and renames it over the file (new inode): IN_MOVED_TO.
void WriteByRename(const std::string& path, std::string_view content) {
  std::string temp = path + ".tmp";
  WriteInPlace(temp, content);
  REQUIRE(std::rename(temp.c_str(), path.c_str()) == 0);
}

// Sets the file's times to a fixed past moment, so its mtime and ctime surely differ.
void Touch(const std::string& path) {
  struct timespec times[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string ServiceItem(std::string_view ns, std::string_view name, std::string_view ip) {
  return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + std::string(name) +
         R"(","namespace":")" + std::string(ns) + R"("},"spec":{"type":"ClusterIP","clusterIP":")" +
         std::string(ip) + R"(","ports":[{"name":"http","protocol":"TCP","port":80}]}})";
}

std::string SliceItem(std::string_view ns, std::string_view service, std::string_view ip) {
  return R"({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":")" +
         std::string(service) + R"(-abcde","namespace":")" + std::string(ns) +
         R"(","labels":{"kubernetes.io/service-name":")" + std::string(service) +
         R"("}},"addressType":"IPv4","endpoints":[{"addresses":[")" + std::string(ip) +
         R"("],"conditions":{"ready":true}}],"ports":[{"name":"http","protocol":"TCP","port":80}]})";
}

std::string EndpointsItem(std::string_view ns, std::string_view name, std::string_view ip) {
  return R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":")" + std::string(name) +
         R"(","namespace":")" + std::string(ns) + R"("},"subsets":[{"addresses":[{"ip":")" +
         std::string(ip) + R"("}],"ports":[{"name":"http","protocol":"TCP","port":80}]}]})";
}

std::string PodItem(std::string_view ns, std::string_view name, std::string_view ip) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + std::string(name) +
         R"(","namespace":")" + std::string(ns) + R"("},"status":{"phase":"Running","podIP":")" +
         std::string(ip) + R"("}})";
}

// A Service without a name: the decoder skips it as a bad item.
std::string BadItem() {
  return R"({"apiVersion":"v1","kind":"Service","metadata":{"namespace":"default"},"spec":{}})";
}

std::string List(const std::vector<std::string>& items) {
  std::string text = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (size_t i = 0; i < items.size(); ++i) text += (i == 0 ? "" : ",") + items[i];
  return text + "]}";
}

const std::string kOneService = List({ServiceItem("default", "web", "10.96.1.1")});
const std::string kTwoServices =
    List({ServiceItem("default", "web", "10.96.1.1"), ServiceItem("shop", "cart", "10.96.1.2")});

ObjectsFileSource::Options InotifyOnly(const std::string& path) {
  ObjectsFileSource::Options options;
  options.path = path;
  options.watch = ObjectsFileSource::Watch::kInotify;
  options.poll_interval_ms = kNoPollMs;
  options.debounce_ms = 10;
  return options;
}

ObjectsFileSource::Options PollOnly(const std::string& path) {
  ObjectsFileSource::Options options;
  options.path = path;
  options.watch = ObjectsFileSource::Watch::kPollOnly;
  options.poll_interval_ms = 10;
  return options;
}

bool WaitFor(loop::Loop& loop, const std::function<bool()>& done) {
  return loop::testing::RunUntil(loop, done, kWaitMs);
}

TEST_CASE("Loading the conformance objects file delivers every Service and slice and Synced once",
          "[objects_file]") {
  const std::string path = "test/conformance/objects.json";
  auto expected = k8s::DecodeList(ReadAll(path));
  REQUIRE(expected.ok());
  REQUIRE(expected->bad_items == 0);

  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();  // reads before returning

    CHECK(sink.calls == std::vector<std::string>{"ReplacePods", "ReplaceAll", "Synced"});
    CHECK(sink.last.services.size() == expected->services.size());
    CHECK(sink.last.slices.size() == expected->endpoint_slices.size());
    CHECK(sink.last.services.size() == 12);
    CHECK(sink.last.slices.size() == 7);
    CHECK(sink.last.endpoints.empty());
    CHECK(source.stats().synced);
    CHECK(source.stats().reloads_ok == 1);
    CHECK(source.stats().reloads_failed == 0);
    CHECK(source.stats().bad_items == 0);

    // The set is what a RecordTreeWriter takes.
    RecordTreeWriter writer;
    writer.ReplaceAll(sink.last);
    auto snapshot = writer.Publish();
    CHECK(snapshot->FindService("default", "kubernetes") != nullptr);
    CHECK(snapshot->FindService("kube-system", "kube-dns") != nullptr);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("A file rewritten in place is picked up by the inotify watch", "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kOneService);
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    REQUIRE(sink.ServiceNames() == std::vector<std::string>{"default/web"});

    WriteInPlace(path, kTwoServices);
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});
    CHECK(sink.synced == 1);  // Synced is delivered once, not per reload
    CHECK(source.stats().reloads_ok == 2);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("A file replaced by a rename over it is picked up by the inotify watch",
          "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kOneService);
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();
    REQUIRE(sink.replace_all == 1);

    WriteByRename(path, kTwoServices);
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});

    // And again: the watch is on the directory, so the new inode is watched too.
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 3; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("A ConfigMap-style update that swaps the ..data symlink is picked up", "[objects_file]") {
  // The kubelet's atomic writer: PATH -> ..data/objects.json, ..data -> ..<timestamp>; an
  // update writes a new timestamped directory and renames a new ..data link over the old.
  TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directory(dir.File("..v1"));
  WriteInPlace(dir.File("..v1/objects.json"), kOneService);
  fs::create_directory_symlink("..v1", dir.File("..data"));
  fs::create_symlink("..data/objects.json", dir.File("objects.json"));

  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(dir.File("objects.json")));
    source.Start();
    REQUIRE(sink.replace_all == 1);

    fs::create_directory(dir.File("..v2"));
    WriteInPlace(dir.File("..v2/objects.json"), kTwoServices);
    fs::create_directory_symlink("..v2", dir.File("..data_tmp"));
    fs::rename(dir.File("..data_tmp"), dir.File("..data"));
    fs::remove_all(dir.File("..v1"));

    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("A burst of writes is read once, after it ends", "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kOneService);
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, InotifyOnly(path));
    source.Start();

    // All events are queued before the loop runs again, so they fall into one debounce.
    for (int i = 0; i < 5; ++i) {
      WriteInPlace(path, List({ServiceItem("default", "web-" + std::to_string(i), "10.96.1.1")}));
    }
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web-4"});
    CHECK(source.stats().reloads_ok == 2);
    CHECK(source.stats().unchanged == 0);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("An unchanged file is not applied again after a touch or a same-bytes rewrite",
          "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kOneService);
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    auto options = InotifyOnly(path);
    options.poll_interval_ms = 10;  // the poll sees the touch (inotify does not watch times)
    ObjectsFileSource source(loop, sink, registry, options);
    source.Start();
    REQUIRE(sink.replace_all == 1);

    uint64_t unchanged = source.stats().unchanged;
    SECTION("a rewrite with the same bytes") { WriteInPlace(path, kOneService); }
    SECTION("a touch") { Touch(path); }
    SECTION("a rename of the same bytes over it") { WriteByRename(path, kOneService); }
    REQUIRE(WaitFor(loop, [&] { return source.stats().unchanged > unchanged; }));
    CHECK(sink.replace_all == 1);
    CHECK(source.stats().reloads_ok == 1);
    CHECK(source.stats().reloads_failed == 0);
  }
  loop::testing::RequireClosesClean(loop);
}

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
    REQUIRE(sink.replace_all == 1);

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
    CHECK(sink.replace_all == 1);  // the last good set stays
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});
    INFO("last error: " << source.stats().last_error);
    CHECK(source.stats().last_error.find(reason) != std::string::npos);
    CHECK_FALSE(source.stats().last_error.empty());

    std::error_code ignored;
    std::filesystem::remove(path, ignored);  // the directory case
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
    CHECK(source.stats().reloads_failed == 1);
    CHECK(sink.synced == 1);
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
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
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
    CHECK(sink.calls == std::vector<std::string>{"ReplacePods", "ReplaceAll", "Synced"});
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
    CHECK(source.stats().reloads_failed == 1);
  }
  loop::testing::RequireClosesClean(loop);
}

TEST_CASE("The poll timer alone picks up changes when the inotify watch is off", "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  loop::Loop loop;
  {
    metrics::Registry registry;
    RecordingSink sink;
    ObjectsFileSource source(loop, sink, registry, PollOnly(path));
    source.Start();
    CHECK(source.stats().reloads_failed == 1);  // missing

    // A missing file that stays missing is not counted again at every poll.
    WriteInPlace(dir.File("other.json"), "{}");
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 1; }));
    CHECK(sink.synced == 1);
    CHECK(source.stats().reloads_failed == 1);

    WriteInPlace(path, kTwoServices);  // in place, a different size
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});

    WriteByRename(path, "garbage");
    REQUIRE(WaitFor(loop, [&] { return source.stats().reloads_failed == 2; }));
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 3; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
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
    REQUIRE(sink.replace_all == 1);
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
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
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
    REQUIRE(WaitFor(loop, [&] { return sink.replace_all == 2; }));
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

TEST_CASE("A stopped source delivers nothing more and leaves no handle open", "[objects_file]") {
  TempDir dir;
  const std::string path = dir.File("objects.json");
  WriteInPlace(path, kOneService);
  loop::Loop loop;
  metrics::Registry registry;
  RecordingSink sink;
  auto source = std::make_unique<ObjectsFileSource>(loop, sink, registry, PollOnly(path));
  source->Start();
  source->Stop();
  source->Stop();  // idempotent
  WriteByRename(path, kTwoServices);
  // With the source stopped nothing is active, so the loop runs dry and returns.
  loop.Run();
  CHECK(sink.replace_all == 1);
  source.reset();
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

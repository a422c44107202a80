// Test helpers shared by the objects-file source tests (objects_file_source_test.cc: how
// changes are noticed; objects_file_source_content_test.cc: what a file's content does;
// objects_file_source_reload_test.cc: how a good file is applied): a sink that applies what
// the source delivers to a RecordTreeWriter (RecordingSink, which writes it down, is
// recording_sink_testing.h's), ways to write the file (in place, by rename,
// touch), Kubernetes List items, watch options, and the file, loop and source of one test.
// Header-only; tests only; everything runs on the test's thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/k8s/decode.h"
#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "kubedns/records/record_tree.h"
#include "kubedns/records/records_testing.h"  // ReadFile
#include "kubedns/sources/objects_file_source.h"
#include "kubedns/sources/recording_sink_testing.h"
#include "test/unit/temp_dir.h"

namespace kdns::kubedns::testing {

using kdns::testing::TempDir;

// Waits stay far above what the work needs; RunUntil returns as soon as it is done.
inline constexpr int kWaitMs = 5000;
// Long enough that only inotify can notice a change during a test.
inline constexpr uint64_t kNoPollMs = 3'600'000;

// Applies what the source delivers to a RecordTreeWriter, as kubedns's Publisher does:
// publishes `snapshot` after each load, ended or aborted, and inside a load whenever the
// writer says a publish is due (every `list_publish_bytes` of new records), counting those
// in `publishes_during_loads`. `on_begin_load`, if set, runs at each BeginLoad: between the
// source's validating and applying passes.
class WriterSink final : public RecordSink {
 public:
  explicit WriterSink(uint64_t list_publish_bytes = RecordTreeWriter::kListPublishBytes)
      : writer(list_publish_bytes) {}

  void BeginLoad() override {
    if (on_begin_load) on_begin_load();
    writer.BeginLoad();
  }
  void EndLoad() override {
    writer.EndLoad();
    snapshot = writer.Publish();
  }
  void AbortLoad() override {
    writer.AbortLoad();
    ++aborted_loads;
    snapshot = writer.Publish();
  }
  void BeginList(RecordTreeWriter::ListKind kind) override { writer.BeginList(kind); }
  void EndList(RecordTreeWriter::ListKind kind) override { writer.EndList(kind); }
  void UpsertService(const k8s::Service& service) override {
    writer.UpsertService(service);
    PublishIfDue();
  }
  void DeleteService(std::string_view ns, std::string_view name) override {
    writer.DeleteService(ns, name);
  }
  void UpsertSlice(const k8s::EndpointSlice& slice) override {
    writer.UpsertSlice(slice);
    PublishIfDue();
  }
  void DeleteSlice(std::string_view ns, std::string_view name) override {
    writer.DeleteSlice(ns, name);
  }
  void UpsertEndpoints(const k8s::Endpoints& endpoints) override {
    writer.UpsertEndpoints(endpoints);
    PublishIfDue();
  }
  void DeleteEndpoints(std::string_view ns, std::string_view name) override {
    writer.DeleteEndpoints(ns, name);
  }
  void UpsertPod(const k8s::Pod& pod) override { writer.UpsertPod(pod); }
  void Synced() override {}

  RecordTreeWriter writer;
  std::shared_ptr<const Snapshot> snapshot;
  int aborted_loads = 0;
  int publishes_during_loads = 0;
  std::function<void()> on_begin_load;

 private:
  void PublishIfDue() {
    if (!writer.PublishDue()) return;
    snapshot = writer.Publish();
    ++publishes_during_loads;
  }
};

// Truncates and rewrites the file (same inode): IN_CLOSE_WRITE.
inline void WriteInPlace(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  REQUIRE(out.good());
}

// Writes a temporary file next to it and renames it over the file (new inode): IN_MOVED_TO.
inline void WriteByRename(const std::string& path, std::string_view content) {
  std::string temp = path + ".tmp";
  WriteInPlace(temp, content);
  REQUIRE(std::rename(temp.c_str(), path.c_str()) == 0);
}

// Sets the file's times to a fixed past moment, so its mtime and ctime surely differ.
inline void Touch(const std::string& path) {
  struct timespec times[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

inline std::string ServiceItem(std::string_view ns, std::string_view name, std::string_view ip) {
  return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + std::string(name) +
         R"(","namespace":")" + std::string(ns) + R"("},"spec":{"type":"ClusterIP","clusterIP":")" +
         std::string(ip) + R"(","ports":[{"name":"http","protocol":"TCP","port":80}]}})";
}

inline std::string SliceItem(std::string_view ns, std::string_view service, std::string_view ip) {
  return R"({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":")" +
         std::string(service) + R"(-abcde","namespace":")" + std::string(ns) +
         R"(","labels":{"kubernetes.io/service-name":")" + std::string(service) +
         R"("}},"addressType":"IPv4","endpoints":[{"addresses":[")" + std::string(ip) +
         R"("],"conditions":{"ready":true}}],"ports":[{"name":"http","protocol":"TCP","port":80}]})";
}

inline std::string EndpointsItem(std::string_view ns, std::string_view name, std::string_view ip) {
  return R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":")" + std::string(name) +
         R"(","namespace":")" + std::string(ns) + R"("},"subsets":[{"addresses":[{"ip":")" +
         std::string(ip) + R"("}],"ports":[{"name":"http","protocol":"TCP","port":80}]}]})";
}

inline std::string PodItem(std::string_view ns, std::string_view name, std::string_view ip) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + std::string(name) +
         R"(","namespace":")" + std::string(ns) + R"("},"status":{"phase":"Running","podIP":")" +
         std::string(ip) + R"("}})";
}

// A Service without a name: the decoder skips it as a bad item.
inline std::string BadItem() {
  return R"({"apiVersion":"v1","kind":"Service","metadata":{"namespace":"default"},"spec":{}})";
}

inline std::string List(const std::vector<std::string>& items) {
  std::string text = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (size_t i = 0; i < items.size(); ++i) text += (i == 0 ? "" : ",") + items[i];
  return text + "]}";
}

inline const std::string kOneService = List({ServiceItem("default", "web", "10.96.1.1")});
inline const std::string kTwoServices =
    List({ServiceItem("default", "web", "10.96.1.1"), ServiceItem("shop", "cart", "10.96.1.2")});

inline ObjectsFileSource::Options InotifyOnly(const std::string& path) {
  ObjectsFileSource::Options options;
  options.path = path;
  options.watch = ObjectsFileSource::Watch::kInotify;
  options.poll_interval_ms = kNoPollMs;
  options.debounce_ms = 10;
  return options;
}

inline ObjectsFileSource::Options PollOnly(const std::string& path) {
  ObjectsFileSource::Options options;
  options.path = path;
  options.watch = ObjectsFileSource::Watch::kPollOnly;
  options.poll_interval_ms = 10;
  return options;
}

// One test's objects file and the source that reads it into a `Sink`, on the test's own
// loop: `path` is objects.json in a fresh directory (the test writes it, or points the source
// elsewhere). Start makes the source and starts it; the destructor stops it, and the
// LoopFixture base checks that the loop closes clean.
template <typename Sink = RecordingSink>
class ObjectsFileTest : public loop::testing::LoopFixture {
 public:
  template <typename... SinkArgs>
  explicit ObjectsFileTest(SinkArgs&&... sink_args) : sink(std::forward<SinkArgs>(sink_args)...) {}
  ~ObjectsFileTest() { source_.reset(); }
  ObjectsFileTest(const ObjectsFileTest&) = delete;
  ObjectsFileTest& operator=(const ObjectsFileTest&) = delete;

  // Makes the source (its metrics are registered then) and does not start it.
  ObjectsFileSource& Make(const ObjectsFileSource::Options& options) {
    source_ = std::make_unique<ObjectsFileSource>(loop, sink, registry, options);
    return *source_;
  }
  // Makes the source and starts it: it reads the file before it returns.
  ObjectsFileSource& Start(const ObjectsFileSource::Options& options) {
    Make(options).Start();
    return *source_;
  }
  ObjectsFileSource& Start() { return Start(InotifyOnly(path)); }

  // Runs the loop until `done`, at most kWaitMs.
  bool WaitFor(const std::function<bool()>& done) {
    return loop::testing::RunUntil(loop, done, kWaitMs);
  }

  TempDir dir;
  const std::string path = dir.File("objects.json");
  metrics::Registry registry;
  Sink sink;

 private:
  std::unique_ptr<ObjectsFileSource> source_;
};

}  // namespace kdns::kubedns::testing

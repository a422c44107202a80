#include "kubedns/sources/objects_file_source.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/metrics/registry.h"
#include "kubedns/sources/objects_file_source_testing.h"

// How the source notices a change: inotify on the file or its directory, the poll timer,
// debouncing, and stopping. What a file's content does is objects_file_source_content_test.cc.
namespace kdns::kubedns {
namespace {

using namespace testing;

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

    CHECK(sink.calls == std::vector<std::string>{"BeginLoad", "EndLoad", "Synced"});
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
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
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
    REQUIRE(sink.loads == 1);

    WriteByRename(path, kTwoServices);
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});

    // And again: the watch is on the directory, so the new inode is watched too.
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 3; }));
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
    REQUIRE(sink.loads == 1);

    fs::create_directory(dir.File("..v2"));
    WriteInPlace(dir.File("..v2/objects.json"), kTwoServices);
    fs::create_directory_symlink("..v2", dir.File("..data_tmp"));
    fs::rename(dir.File("..data_tmp"), dir.File("..data"));
    fs::remove_all(dir.File("..v1"));

    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
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
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
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
    REQUIRE(sink.loads == 1);

    uint64_t unchanged = source.stats().unchanged;
    SECTION("a rewrite with the same bytes") { WriteInPlace(path, kOneService); }
    SECTION("a touch") { Touch(path); }
    SECTION("a rename of the same bytes over it") { WriteByRename(path, kOneService); }
    REQUIRE(WaitFor(loop, [&] { return source.stats().unchanged > unchanged; }));
    CHECK(sink.loads == 1);
    CHECK(source.stats().reloads_ok == 1);
    CHECK(source.stats().reloads_failed == 0);
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
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 1; }));
    CHECK(sink.synced == 1);
    CHECK(source.stats().reloads_failed == 1);

    WriteInPlace(path, kTwoServices);  // in place, a different size
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 2; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});

    WriteByRename(path, "garbage");
    REQUIRE(WaitFor(loop, [&] { return source.stats().reloads_failed == 2; }));
    WriteByRename(path, kOneService);
    REQUIRE(WaitFor(loop, [&] { return sink.loads == 3; }));
    CHECK(sink.ServiceNames() == std::vector<std::string>{"default/web"});
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
  CHECK(sink.loads == 1);
  source.reset();
  loop::testing::RequireClosesClean(loop);
}

}  // namespace
}  // namespace kdns::kubedns

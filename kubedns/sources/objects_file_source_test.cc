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
  auto expected = k8s::DecodeList(ReadFile(path));
  REQUIRE(expected.ok());
  REQUIRE(expected->bad_items == 0);

  ObjectsFileTest f;
  ObjectsFileSource& source = f.Start(InotifyOnly(path));

  CHECK(f.sink.calls ==
        std::vector<std::string>{"BeginLoad", "EndLoad", "McsSynced", "KubesliceSynced", "Synced"});
  CHECK(f.sink.last.services.size() == expected->services.size());
  CHECK(f.sink.last.slices.size() == expected->endpoint_slices.size());
  CHECK(f.sink.last.services.size() == 12);
  CHECK(f.sink.last.slices.size() == 7);
  CHECK(f.sink.last.endpoints.empty());
  CHECK(source.stats().synced);
  CHECK(source.stats().reloads_ok == 1);
  CHECK(source.stats().reloads_failed == 0);
  CHECK(source.stats().bad_items == 0);

  // The set is what a RecordTreeWriter takes.
  RecordTreeWriter writer;
  writer.ReplaceAll(f.sink.last);
  auto snapshot = writer.Publish();
  CHECK(snapshot->FindService("default", "kubernetes") != nullptr);
  CHECK(snapshot->FindService("kube-system", "kube-dns") != nullptr);
}

TEST_CASE("A file rewritten in place is picked up by the inotify watch", "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kOneService);
  ObjectsFileSource& source = f.Start();
  REQUIRE(f.sink.ServiceNames() == std::vector<std::string>{"default/web"});

  WriteInPlace(f.path, kTwoServices);
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});
  CHECK(f.sink.synced == 1);  // Synced is delivered once, not per reload
  CHECK(source.stats().reloads_ok == 2);
}

TEST_CASE("A file replaced by a rename over it is picked up by the inotify watch",
          "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kOneService);
  f.Start();
  REQUIRE(f.sink.loads == 1);

  WriteByRename(f.path, kTwoServices);
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});

  // And again: the watch is on the directory, so the new inode is watched too.
  WriteByRename(f.path, kOneService);
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 3; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web"});
}

TEST_CASE("A ConfigMap-style update that swaps the ..data symlink is picked up", "[objects_file]") {
  // The kubelet's atomic writer: PATH -> ..data/objects.json, ..data -> ..<timestamp>; an
  // update writes a new timestamped directory and renames a new ..data link over the old.
  ObjectsFileTest f;
  namespace fs = std::filesystem;
  fs::create_directory(f.dir.File("..v1"));
  WriteInPlace(f.dir.File("..v1/objects.json"), kOneService);
  fs::create_directory_symlink("..v1", f.dir.File("..data"));
  fs::create_symlink("..data/objects.json", f.path);

  f.Start();
  REQUIRE(f.sink.loads == 1);

  fs::create_directory(f.dir.File("..v2"));
  WriteInPlace(f.dir.File("..v2/objects.json"), kTwoServices);
  fs::create_directory_symlink("..v2", f.dir.File("..data_tmp"));
  fs::rename(f.dir.File("..data_tmp"), f.dir.File("..data"));
  fs::remove_all(f.dir.File("..v1"));

  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});
}

TEST_CASE("A burst of writes is read once, after it ends", "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kOneService);
  ObjectsFileSource& source = f.Start();

  // All events are queued before the loop runs again, so they fall into one debounce.
  for (int i = 0; i < 5; ++i) {
    WriteInPlace(f.path, List({ServiceItem("default", "web-" + std::to_string(i), "10.96.1.1")}));
  }
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web-4"});
  CHECK(source.stats().reloads_ok == 2);
  CHECK(source.stats().unchanged == 0);
}

TEST_CASE("An unchanged file is not applied again after a touch or a same-bytes rewrite",
          "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kOneService);
  auto options = InotifyOnly(f.path);
  options.poll_interval_ms = 10;  // the poll sees the touch (inotify does not watch times)
  ObjectsFileSource& source = f.Start(options);
  REQUIRE(f.sink.loads == 1);

  uint64_t unchanged = source.stats().unchanged;
  SECTION("a rewrite with the same bytes") { WriteInPlace(f.path, kOneService); }
  SECTION("a touch") { Touch(f.path); }
  SECTION("a rename of the same bytes over it") { WriteByRename(f.path, kOneService); }
  REQUIRE(f.WaitFor([&] { return source.stats().unchanged > unchanged; }));
  CHECK(f.sink.loads == 1);
  CHECK(source.stats().reloads_ok == 1);
  CHECK(source.stats().reloads_failed == 0);
}

TEST_CASE("The poll timer alone picks up changes when the inotify watch is off", "[objects_file]") {
  ObjectsFileTest f;
  ObjectsFileSource& source = f.Start(PollOnly(f.path));
  CHECK(source.stats().reloads_failed == 1);  // missing

  // A missing file that stays missing is not counted again at every poll.
  WriteInPlace(f.dir.File("other.json"), "{}");
  WriteByRename(f.path, kOneService);
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 1; }));
  CHECK(f.sink.synced == 1);
  CHECK(source.stats().reloads_failed == 1);

  WriteInPlace(f.path, kTwoServices);  // in place, a different size
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 2; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web", "shop/cart"});

  WriteByRename(f.path, "garbage");
  REQUIRE(f.WaitFor([&] { return source.stats().reloads_failed == 2; }));
  WriteByRename(f.path, kOneService);
  REQUIRE(f.WaitFor([&] { return f.sink.loads == 3; }));
  CHECK(f.sink.ServiceNames() == std::vector<std::string>{"default/web"});
}

TEST_CASE("A stopped source delivers nothing more and leaves no handle open", "[objects_file]") {
  ObjectsFileTest f;
  WriteInPlace(f.path, kOneService);
  ObjectsFileSource& source = f.Start(PollOnly(f.path));
  source.Stop();
  source.Stop();  // idempotent
  WriteByRename(f.path, kTwoServices);
  // With the source stopped nothing is active, so the loop runs dry and returns.
  f.loop.Run();
  CHECK(f.sink.loads == 1);
}

}  // namespace
}  // namespace kdns::kubedns

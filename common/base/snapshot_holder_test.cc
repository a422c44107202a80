#include "common/base/snapshot_holder.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

namespace kdns {

TEST_CASE("a reader sees nothing before the first publish", "[snapshot_holder]") {
  SnapshotHolder<int> holder;
  SnapshotHolder<int>::Reader reader(holder);
  CHECK(reader.Get() == nullptr);
  CHECK(holder.Current() == nullptr);
}

TEST_CASE("a reader sees each published value and keeps its copy alive", "[snapshot_holder]") {
  SnapshotHolder<int> holder;
  SnapshotHolder<int>::Reader reader(holder);
  holder.Publish(std::make_shared<const int>(1));
  const int* first = reader.Get();
  REQUIRE(first != nullptr);
  CHECK(*first == 1);
  std::weak_ptr<const int> watch = holder.Current();
  holder.Publish(std::make_shared<const int>(2));
  CHECK_FALSE(watch.expired());  // the reader still holds generation 1
  CHECK(*first == 1);
  CHECK(*reader.Get() == 2);
  CHECK(watch.expired());  // released once the reader moved on
  CHECK(holder.generation() == 2);
}

TEST_CASE("a reader that released does not keep an old snapshot alive", "[snapshot_holder]") {
  SnapshotHolder<int> holder;
  SnapshotHolder<int>::Reader idle(holder);
  SnapshotHolder<int>::Reader busy(holder);
  holder.Publish(std::make_shared<const int>(1));
  REQUIRE(*idle.Get() == 1);
  REQUIRE(*busy.Get() == 1);
  std::weak_ptr<const int> first = holder.Current();
  CHECK(first.use_count() == 3);  // the holder and both readers
  idle.Release();
  CHECK(first.use_count() == 2);
  holder.Publish(std::make_shared<const int>(2));
  CHECK(*busy.Get() == 2);
  CHECK(first.expired());  // the idle reader, released, does not pin generation 1
  std::weak_ptr<const int> second = holder.Current();
  CHECK(second.use_count() == 2);  // the holder and the busy reader only
  CHECK(*idle.Get() == 2);         // the next Get takes the current snapshot again
  CHECK(second.use_count() == 3);
  idle.Release();
  idle.Release();  // twice is harmless
  CHECK(*idle.Get() == 2);
}

TEST_CASE("a reader released before the first publish still sees nothing", "[snapshot_holder]") {
  SnapshotHolder<int> holder;
  SnapshotHolder<int>::Reader reader(holder);
  reader.Release();
  CHECK(reader.Get() == nullptr);
  holder.Publish(std::make_shared<const int>(7));
  CHECK(*reader.Get() == 7);
}

TEST_CASE("readers on other threads always see a whole, increasing value", "[snapshot_holder]") {
  struct Pair {
    int a;
    int b;  // always equal to a: a torn read would show
  };
  SnapshotHolder<Pair> holder;
  holder.Publish(std::make_shared<const Pair>(Pair{0, 0}));
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> readers;
  readers.reserve(3);
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      SnapshotHolder<Pair>::Reader reader(holder);
      int last = 0;
      while (!done.load()) {
        const Pair* pair = reader.Get();
        if (pair->a != pair->b || pair->a < last) failures.fetch_add(1);
        last = pair->a;
      }
    });
  }
  for (int i = 1; i <= 20000; ++i) holder.Publish(std::make_shared<const Pair>(Pair{i, i}));
  done = true;
  for (auto& thread : readers) thread.join();
  CHECK(failures.load() == 0);
  CHECK(holder.Current()->a == 20000);
}

}  // namespace kdns

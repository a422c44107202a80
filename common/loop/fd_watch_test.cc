#include "common/loop/fd_watch.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "common/loop/loop_test_util.h"

namespace kdns::loop {
namespace {

// A connected socket pair; the FdWatch never owns these fds.
struct SocketPair {
  SocketPair() { REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0); }
  ~SocketPair() {
    close(fds[0]);
    close(fds[1]);
  }
  int fds[2];
};

TEST_CASE("An FdWatch reports what it was asked to wait for, and interest can change",
          "[loop][fd_watch]") {
  Loop loop;
  SocketPair pair;
  {
    int readable = 0, writable = 0;
    std::string error;
    auto watch = FdWatch::Open(
        loop, pair.fds[0],
        [&](int ready, int status) {
          CHECK(status == 0);
          if ((ready & FdWatch::kReadable) != 0) ++readable;
          if ((ready & FdWatch::kWritable) != 0) ++writable;
        },
        &error);
    REQUIRE(watch != nullptr);
    REQUIRE(watch->SetInterest(FdWatch::kWritable) == 0);
    REQUIRE(testing::RunUntil(loop, [&] { return writable > 0; }));
    CHECK(readable == 0);

    REQUIRE(watch->SetInterest(FdWatch::kReadable) == 0);
    writable = 0;
    REQUIRE(write(pair.fds[1], "x", 1) == 1);
    REQUIRE(testing::RunUntil(loop, [&] { return readable > 0; }));
    CHECK(writable == 0);

    REQUIRE(watch->SetInterest(0) == 0);
    CHECK(watch->interest() == 0);
    loop.RunNoWait();
  }
  testing::RequireClosesClean(loop);
}

TEST_CASE("An FdWatch may be destroyed from inside its callback", "[loop][fd_watch]") {
  Loop loop;
  SocketPair pair;
  {
    int calls = 0;
    std::string error;
    std::unique_ptr<FdWatch> watch;
    watch = FdWatch::Open(
        loop, pair.fds[0],
        [&](int, int) {
          ++calls;
          watch.reset();
        },
        &error);
    REQUIRE(watch != nullptr);
    REQUIRE(watch->SetInterest(FdWatch::kWritable) == 0);
    REQUIRE(testing::RunUntil(loop, [&] { return watch == nullptr; }));
    loop.RunNoWait();
    CHECK(calls == 1);
  }
  testing::RequireClosesClean(loop);
}

TEST_CASE_METHOD(testing::LoopFixture, "A file that cannot be polled is refused with a reason",
                 "[loop][fd_watch]") {
  FILE* file = tmpfile();
  REQUIRE(file != nullptr);
  std::string error;
  auto watch = FdWatch::Open(
      loop, fileno(file), [](int, int) {}, &error);
  CHECK(watch == nullptr);
  CHECK_FALSE(error.empty());
  fclose(file);
}

}  // namespace
}  // namespace kdns::loop

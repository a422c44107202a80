// The main of the unit and integration test binaries: Catch2's runner, after the
// process-wide set-up that must happen before any test starts a thread.
#define CATCH_CONFIG_RUNNER
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <catch2/catch.hpp>
#include <ctime>

int main(int argc, char** argv) {
  // glibc initializes its time zone state lazily on the first localtime() (glog calls it
  // for every log line), without a lock the sanitizers can see: do it once, here, while
  // there is a single thread.
  tzset();
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  return Catch::Session().run(argc, argv);
}

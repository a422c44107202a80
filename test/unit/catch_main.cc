// The main of the unit and integration test binaries: Catch2's runner, after the
// process-wide set-up that must happen before any test starts a thread.
#define CATCH_CONFIG_RUNNER
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <catch2/catch.hpp>

#include "common/base/time_zone.h"

int main(int argc, char** argv) {
  kdns::InitTimeZoneBeforeThreads();
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  return Catch::Session().run(argc, argv);
}

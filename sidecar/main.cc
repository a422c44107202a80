// sidecar: Probes the pod's DNS servers; serves health checks and Prometheus metrics.
// Flags and wiring only; the program's behaviour lives in classes that tests drive.
#include <gflags/gflags.h>

#include <string>

#include "common/base/version.h"

int main(int argc, char** argv) {
  gflags::SetVersionString(kdns::kVersion);
  gflags::SetUsageMessage(
      std::string(
          "Probes the pod's DNS servers; serves health checks and Prometheus metrics.\nUsage: ") +
      argv[0] + " [flags]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  gflags::ShowUsageWithFlagsRestrict(argv[0], "sidecar/");
  return 0;
}

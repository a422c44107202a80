// nanny: Supervises frontend-cache and applies the kube-dns ConfigMap.
// Flags and wiring only; the program's behaviour lives in classes that tests drive.
#include <gflags/gflags.h>

#include <string>

#include "common/base/version.h"

int main(int argc, char** argv) {
  gflags::SetVersionString(kdns::kVersion);
  gflags::SetUsageMessage(
      std::string("Supervises frontend-cache and applies the kube-dns ConfigMap.\nUsage: ") +
      argv[0] + " [flags]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  gflags::ShowUsageWithFlagsRestrict(argv[0], "nanny/");
  return 0;
}

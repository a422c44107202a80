// frontend-cache: Caching DNS forwarder for the cluster (the dnsmasq role in a kube-dns pod).
// Flags and wiring only; the program's behaviour lives in classes that tests drive.
#include <gflags/gflags.h>

#include <string>

#include "common/base/version.h"

int main(int argc, char** argv) {
  gflags::SetVersionString(kdns::kVersion);
  gflags::SetUsageMessage(
      std::string(
          "Caching DNS forwarder for the cluster (the dnsmasq role in a kube-dns pod).\nUsage: ") +
      argv[0] + " [flags]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  gflags::ShowUsageWithFlagsRestrict(argv[0], "frontend-cache/");
  return 0;
}

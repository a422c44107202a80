// Helpers of kubedns's options tests (options*_test.cc): flags that need no Kubernetes API
// configuration, and the one-line error that building options from flags gives. Header-only;
// tests only.
#pragma once

#include <string>

#include "common/k8s/api_config.h"
#include "common/k8s/testing.h"
#include "kubedns/options.h"

namespace kdns::kubedns::testing {

// Flags that need no Kubernetes API configuration.
inline FlagValues Offline() {
  FlagValues flags;
  flags.objects_file = "/tmp/objects.json";
  return flags;
}

// The error of building options from `flags` in `env`; empty when they build.
inline std::string ErrorOf(const FlagValues& flags,
                           const k8s::EnvLookup& env = k8s::testing::Env({})) {
  Options options;
  std::string error;
  if (BuildOptions(flags, env, &options, &error)) return "";
  return error;
}

}  // namespace kdns::kubedns::testing

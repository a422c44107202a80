// SkipTest: a test case that cannot run here says so, and why, on a line of its own that
// test/run_suites.sh counts ("SKIP <test case>: <reason>": shown as skipped and not as
// passed), since Catch2 2 has no skip; the caller then returns. What the install step
// provides (mk/deps.sh: a tool, a package) is no reason to skip where that step ran: under
// CI=true such a case fails instead, so a test the install should make possible cannot
// pass by not running.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace kdns::testing {

// Whether what the skipped case lacks comes from the install step.
enum class Provided { kByInstall, kNo };

inline void SkipTest(const std::string& reason, Provided provided) {
  const char* ci = std::getenv("CI");
  if (provided == Provided::kByInstall && ci != nullptr && std::strcmp(ci, "true") == 0) {
    FAIL("skipped under CI=true, but the install step provides what it needs: " << reason);
  }
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  std::cout << "SKIP " << name << ": " << reason << std::endl;
  WARN("skipped: " << reason);
}

}  // namespace kdns::testing

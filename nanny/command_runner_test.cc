#include "nanny/command_runner.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test/unit/temp_dir.h"

namespace kdns::nanny {

TEST_CASE("a command's exit status, output and error come back", "[nanny][command]") {
  ProcessRunner runner;
  const CommandResult result = runner.Run({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(result.exit_status == 3);
  CHECK(result.output == "out\n");
  CHECK(result.error == "err\n");
  CHECK_FALSE(result.ok());
  CHECK(result.Describe({"sh", "-c", "x"}) == "sh -c x: exit 3: err");
  CHECK(runner.Run({"true"}).ok());
}

TEST_CASE("a command that cannot start fails with the reason", "[nanny][command]") {
  ProcessRunner runner;
  const CommandResult result = runner.Run({"kdns-no-such-command"});
  CHECK(result.exit_status != 0);
  CHECK_FALSE(result.ok());
}

TEST_CASE("a command past its deadline is killed and fails", "[nanny][command]") {
  ProcessRunner runner(100);
  const auto start = std::chrono::steady_clock::now();
  const CommandResult result = runner.Run({"sleep", "10"});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(result.exit_status == -1);
  CHECK(result.error == "timed out after 100 ms");
  CHECK(result.Describe({"sleep", "10"}) == "sleep 10: failed: timed out after 100 ms");
}

TEST_CASE("programs are found in the search path", "[nanny][command]") {
  kdns::testing::TempDir dir;
  std::filesystem::create_directories(dir.File("bin"));
  std::ofstream(dir.File("bin/tool")) << "#!/bin/sh\n";
  std::filesystem::permissions(dir.File("bin/tool"), std::filesystem::perms::owner_all);
  std::ofstream(dir.File("bin/plain")) << "data\n";
  const std::string path = dir.File("none") + ":" + dir.File("bin");
  CHECK(FindInPath("tool", path) == dir.File("bin/tool"));
  CHECK_FALSE(FindInPath("plain", path));
  CHECK_FALSE(FindInPath("missing", path));
  CHECK(FindInPath(dir.File("bin/tool"), "") == dir.File("bin/tool"));
  ProcessRunner runner;
  CHECK(runner.Exists("sh"));
  CHECK_FALSE(runner.Exists("kdns-no-such-command"));
}

}  // namespace kdns::nanny

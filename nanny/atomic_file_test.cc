#include "nanny/atomic_file.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("a file is replaced whole, leaving no temporary file behind", "[nanny]") {
  kdns::testing::TempDir dir;
  const std::string path = dir.File("servers.conf");
  std::string error;
  REQUIRE(WriteFileAtomically(path, "server=1.2.3.4\n", &error));
  CHECK(Read(path) == "server=1.2.3.4\n");
  // A reader holding the old file keeps reading the old contents.
  std::ifstream old_reader(path);
  REQUIRE(WriteFileAtomically(path, "server=5.6.7.8\n", &error));
  CHECK(Read(path) == "server=5.6.7.8\n");
  std::stringstream old_text;
  old_text << old_reader.rdbuf();
  CHECK(old_text.str() == "server=1.2.3.4\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("a file that cannot be written is a one-line error", "[nanny]") {
  std::string error;
  CHECK_FALSE(WriteFileAtomically("/nonexistent-dir/servers.conf", "x", &error));
  CHECK(error == "/nonexistent-dir/servers.conf: open: No such file or directory");
}

}  // namespace kdns::nanny

// A fresh directory under /tmp for one test, removed with everything in it when the test
// ends. Header-only; for *_test.cc files.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace kdns::testing {

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/kdns-test-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace kdns::testing

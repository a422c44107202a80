#include "common/base/trim.h"

#include <catch2/catch.hpp>

namespace kdns {
namespace {

TEST_CASE("Trim drops leading and trailing spaces only", "[base][trim]") {
  CHECK(Trim("  a b  ") == "a b");
  CHECK(Trim("a") == "a");
  CHECK(Trim("") == "");
  CHECK(Trim("   ") == "");
  CHECK(Trim("\ta\t") == "\ta\t");  // tabs are not spaces here
}

TEST_CASE("Trim drops the characters it is given", "[base][trim]") {
  CHECK(Trim("\t a \t", " \t") == "a");
  CHECK(Trim("\n\n", " \n").empty());
}

}  // namespace
}  // namespace kdns

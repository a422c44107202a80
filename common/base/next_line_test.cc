#include "common/base/next_line.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kdns {
namespace {

std::vector<std::string> AllLines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) lines.emplace_back(NextLine(&text));
  return lines;
}

TEST_CASE("NextLine takes the lines off a text one by one, without their newline",
          "[base][next_line]") {
  CHECK(AllLines("a\nbb\n") == std::vector<std::string>{"a", "bb"});
  CHECK(AllLines("a\n\nc") == std::vector<std::string>{"a", "", "c"});  // the last without '\n'
  CHECK(AllLines("\n") == std::vector<std::string>{""});
  CHECK(AllLines("").empty());
}

TEST_CASE("NextLine leaves the rest of the text after the line's newline", "[base][next_line]") {
  std::string_view text = "one\r\ntwo";
  CHECK(NextLine(&text) == "one\r");  // a '\r' is the caller's to drop
  CHECK(text == "two");
  CHECK(NextLine(&text) == "two");
  CHECK(text.empty());
}

}  // namespace
}  // namespace kdns

#include "frontend-cache/hosts_watcher.h"

#include <catch2/catch.hpp>

namespace kdns::frontend {
namespace {

TEST_CASE("hosts files are watched one directory each, by their names", "[frontend][hosts]") {
  CHECK(WatchedDirectories({"/etc/hosts", "/etc/kdns/extra", "/etc/hosts", "/etc/kdns/more", "/top",
                            "relative"}) ==
        std::vector<WatchedDirectory>{{"/etc", {"hosts"}},
                                      {"/etc/kdns", {"extra", "more"}},
                                      {"/", {"top"}},
                                      {".", {"relative"}}});
}

}  // namespace
}  // namespace kdns::frontend

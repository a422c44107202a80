#include "nanny/node_cache_presence.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nanny/atomic_file.h"
#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

std::string ProcNetUnix() {
  std::ifstream file("/proc/net/unix");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the node caches present are read from the kernel's list of unix sockets",
          "[nanny][node-local]") {
  const std::string listing =
      "Num       RefCount Protocol Flags    Type St Inode Path\n"
      "0000000000000000: 00000002 00000000 00000000 0002 01 43110 @kdns-nodelocal/0badcafe\n"
      "0000000000000000: 00000003 00000000 00000000 0001 03 43111 /run/systemd/notify\n"
      "0000000000000000: 00000002 00000000 00000000 0002 01 43112 @other/kdns-nodelocal/x\n"
      "0000000000000000: 00000002 00000000 00000000 0002 01 43113 @kdns-nodelocal/12345678\n"
      "0000000000000000: 00000002 00000000 00000000 0001 03 43114\n";
  CHECK(PresentIds(listing) == std::vector<std::string>{"0badcafe", "12345678"});
}

TEST_CASE("another node cache is alive while its socket is listed, ours does not count",
          "[nanny][node-local]") {
  kdns::testing::TempDir dir;
  const std::string path = dir.File("unix");
  NodeCachePresence presence(path);
  std::string error;
  REQUIRE(WriteFileAtomically(path, "Num Path\n", &error));
  CHECK_FALSE(presence.OthersAlive());
  REQUIRE(
      WriteFileAtomically(path, "0: 2 0 0 2 1 1 @kdns-nodelocal/" + presence.id() + "\n", &error));
  CHECK_FALSE(presence.OthersAlive());
  REQUIRE(WriteFileAtomically(path, "0: 2 0 0 2 1 1 @kdns-nodelocal/0badcafe\n", &error));
  CHECK(presence.OthersAlive());
}

TEST_CASE("the presence socket is in the kernel's list until it is withdrawn",
          "[nanny][node-local]") {
  NodeCachePresence presence;
  NodeCachePresence other;
  CHECK(presence.id().size() == 8);
  CHECK(presence.id() != other.id());
  std::string error;
  REQUIRE(presence.Announce(&error));
  REQUIRE(other.Announce(&error));
  const std::string mine = "@kdns-nodelocal/" + presence.id();
  CHECK(ProcNetUnix().find(mine) != std::string::npos);
  CHECK(other.OthersAlive());
  presence.Withdraw();
  CHECK(ProcNetUnix().find(mine) == std::string::npos);
}

}  // namespace kdns::nanny

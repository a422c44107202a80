#include "frontend-cache/hosts_files.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/dns/testing.h"
#include "test/unit/temp_dir.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

HostsEntry Entry(const char* address, const char* name) {
  return HostsEntry{*IpAddress::Parse(address), {N(name)}};
}

TEST_CASE("hosts files are read in order, one that cannot be read left out at first",
          "[frontend][hosts]") {
  testing::TempDir temp;
  Write(temp.File("a"), "10.0.0.1 a.test\n");
  Write(temp.File("b"), "10.0.0.2 b.test\nnot-an-address b2.test\n");
  HostsFiles files({temp.File("a"), temp.File("missing"), temp.File("b")});
  const HostsFiles::Outcome first = files.Read();
  CHECK(first.changed);
  CHECK(first.rejected == 0);  // nothing to keep yet: dnsmasq's way
  CHECK(files.Entries() ==
        std::vector<HostsEntry>{Entry("10.0.0.1", "a.test"), Entry("10.0.0.2", "b.test")});
}

TEST_CASE("a hosts file read again unchanged changes nothing", "[frontend][hosts]") {
  testing::TempDir temp;
  Write(temp.File("a"), "10.0.0.1 a.test\n");
  HostsFiles files({temp.File("a")});
  (void)files.Read();
  Write(temp.File("a"), "# the same entries, another text\n10.0.0.1   a.test\n");
  const HostsFiles::Outcome again = files.Read();
  CHECK_FALSE(again.changed);
  CHECK(again.rejected == 0);
}

TEST_CASE("a changed hosts file replaces its entries only", "[frontend][hosts]") {
  testing::TempDir temp;
  Write(temp.File("a"), "10.0.0.1 a.test\n");
  Write(temp.File("b"), "10.0.0.2 b.test\n");
  HostsFiles files({temp.File("a"), temp.File("b")});
  (void)files.Read();
  Write(temp.File("b"), "10.0.0.3 b.test\n10.0.0.4 new.test\n");
  const HostsFiles::Outcome again = files.Read();
  CHECK(again.changed);
  CHECK(files.Entries() == std::vector<HostsEntry>{Entry("10.0.0.1", "a.test"),
                                                   Entry("10.0.0.3", "b.test"),
                                                   Entry("10.0.0.4", "new.test")});
  Write(temp.File("b"), "");  // emptied on purpose: no entries left
  CHECK(files.Read().changed);
  CHECK(files.Entries() == std::vector<HostsEntry>{Entry("10.0.0.1", "a.test")});
}

TEST_CASE("a hosts file broken or gone after a good read keeps its last good version",
          "[frontend][hosts]") {
  testing::TempDir temp;
  Write(temp.File("a"), "10.0.0.1 a.test\n");
  HostsFiles files({temp.File("a")});
  (void)files.Read();
  const std::vector<HostsEntry> good = {Entry("10.0.0.1", "a.test")};

  SECTION("a bad line rejects the whole new version, counted once while it stays") {
    Write(temp.File("a"), "10.0.0.9 a.test\n10.0.0.300 half-written.test\n");
    HostsFiles::Outcome bad = files.Read();
    CHECK_FALSE(bad.changed);
    CHECK(bad.rejected == 1);
    CHECK(files.Entries() == good);
    bad = files.Read();  // the next poll finds it still broken
    CHECK(bad.rejected == 0);
    CHECK(files.Entries() == good);
  }
  SECTION("a file removed") {
    std::filesystem::remove(temp.File("a"));
    const HostsFiles::Outcome gone = files.Read();
    CHECK_FALSE(gone.changed);
    CHECK(gone.rejected == 1);
    CHECK(files.Entries() == good);
  }
  SECTION("then fixed: the new version applies") {
    Write(temp.File("a"), "not-an-address x.test\n");
    CHECK(files.Read().rejected == 1);
    Write(temp.File("a"), "10.0.0.7 a.test\n");
    const HostsFiles::Outcome fixed = files.Read();
    CHECK(fixed.changed);
    CHECK(fixed.rejected == 0);
    CHECK(files.Entries() == std::vector<HostsEntry>{Entry("10.0.0.7", "a.test")});
  }
}

TEST_CASE("a hosts file that appears after the start is read then", "[frontend][hosts]") {
  testing::TempDir temp;
  HostsFiles files({temp.File("late")});
  CHECK_FALSE(files.Read().changed);
  Write(temp.File("late"), "10.0.0.8 late.test\n");
  CHECK(files.Read().changed);
  CHECK(files.Entries() == std::vector<HostsEntry>{Entry("10.0.0.8", "late.test")});
}

TEST_CASE("the hosts files are /etc/hosts unless --no-hosts, then every --addn-hosts",
          "[frontend][hosts]") {
  Options options;
  options.addn_hosts = {"/x/a", "/y/b"};
  CHECK(HostsFilePaths(options) == std::vector<std::string>{"/etc/hosts", "/x/a", "/y/b"});
  options.no_hosts = true;
  CHECK(HostsFilePaths(options) == std::vector<std::string>{"/x/a", "/y/b"});
}

}  // namespace
}  // namespace kdns::frontend

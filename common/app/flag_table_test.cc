#include "common/app/flag_table.h"

#include <gflags/gflags.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

DEFINE_int32(flag_table_test_port, 0, "a flag of this test, for the table");

namespace kdns::app {
namespace {

TEST_CASE("kube-dns's Go flags are taken out of the command line, each with a warning", "[app]") {
  std::vector<std::string> args = {
      "kubedns",     "--profiling",      "--log-flush-frequency", "5s",
      "--domain=x.", "-log_file=/tmp/k", "--skip_headers=true",   "--v=2",
      "--",          "--log-async"};
  const std::vector<std::string> warnings = TakeOutFlagsWithoutMeaning(&args);
  CHECK(args == std::vector<std::string>{"kubedns", "--domain=x.", "--v=2", "--", "--log-async"});
  REQUIRE(warnings.size() == 4);
  CHECK(warnings[0] == "--profiling is ignored: Go's pprof handlers do not exist here");
  CHECK(warnings[1] ==
        "--log-flush-frequency 5s is ignored: glog writes every line to stderr at "
        "once");
  CHECK(warnings[2].starts_with("-log_file=/tmp/k is ignored: "));
}

TEST_CASE("node-cache's -pidfile and -initialdelay are taken out with their values", "[app]") {
  std::vector<std::string> args = {"nanny",
                                   "-localip",
                                   "169.254.20.10",
                                   "-pidfile",
                                   "/tmp/node-cache.pid",
                                   "-initialdelay=10s",
                                   "-setupebtables"};
  CHECK(TakeOutFlagsWithoutMeaning(&args).size() == 3);
  CHECK(args == std::vector<std::string>{"nanny", "-localip", "169.254.20.10"});
}

TEST_CASE("A bool flag without meaning never takes the next argument", "[app]") {
  std::vector<std::string> args = {"sidecar", "--log-async", "--probe=a,b,c"};
  CHECK(TakeOutFlagsWithoutMeaning(&args).size() == 1);
  CHECK(args == std::vector<std::string>{"sidecar", "--probe=a,b,c"});
}

TEST_CASE("The flag table lists gflags' flags, the ignored ones and the program's own", "[app]") {
  const std::string table = FlagTableText("option\tx\t-\tflag\n");
  CHECK(table.find("flag\tflag_table_test_port\tint32\n") != std::string::npos);
  CHECK(table.find("flag\tv\tint32\n") != std::string::npos);
  CHECK(table.find("ignored\tprofiling\tbool\t") != std::string::npos);
  CHECK(table.find("ignored\tlog-flush-frequency\tvalue\t") != std::string::npos);
  CHECK(table.ends_with("option\tx\t-\tflag\n"));
}

}  // namespace
}  // namespace kdns::app

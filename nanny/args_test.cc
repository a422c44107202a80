#include "nanny/args.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

using Args = std::vector<std::string>;

SplitArgs Split(const Args& args) {
  std::vector<const char*> argv = {"nanny"};
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return SplitAtDoubleDash(static_cast<int>(argv.size()), argv.data());
}

ListenSpec Listen(const Args& args) {
  ListenSpec spec;
  std::string error;
  INFO(error);
  REQUIRE(ParseListenSpec(args, &spec, &error));
  return spec;
}

std::vector<std::string> Addresses(const ListenSpec& spec) {
  std::vector<std::string> out;
  for (const auto& address : spec.addresses) out.push_back(address.ToString());
  return out;
}

}  // namespace

TEST_CASE("arguments split at the first \"--\" as kube-dns's ExtractDnsmasqArgs", "[nanny]") {
  // pkg/dnsmasq/nanny_test.go TestExtractDnsmasqArgs, argv[0] kept with the nanny's part.
  auto [args, own, child] = GENERATE(table<Args, Args, Args>({
      {{}, {"nanny"}, {}},
      {{"a"}, {"nanny", "a"}, {}},
      {{"a", "--"}, {"nanny", "a"}, {}},
      {{"a", "--", "b"}, {"nanny", "a"}, {"b"}},
      {{"--", "b"}, {"nanny"}, {"b"}},
      {{"a", "b", "--", "c", "d"}, {"nanny", "a", "b"}, {"c", "d"}},
      // Only the first "--" splits; a later one is the child's.
      {{"-v=2", "--", "-k", "--", "x"}, {"nanny", "-v=2"}, {"-k", "--", "x"}},
  }));
  CAPTURE(args);
  SplitArgs split = Split(args);
  CHECK(split.own == own);
  CHECK(split.child == child);
}

TEST_CASE("the child's dnsmasq options tell which sockets the nanny holds", "[nanny]") {
  SECTION("defaults: port 53 on every IPv4 address") {
    CHECK(Addresses(Listen({"-k", "--cache-size=1000"})) == Args{"0.0.0.0:53"});
  }
  SECTION("every spelling of --port and --listen-address") {
    auto [args, addresses] = GENERATE(table<Args, Args>({
        {{"--port=5353", "--listen-address=127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"--port", "5353", "--listen-address", "127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"-p", "5353", "-a", "127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"-p5353", "-a127.0.0.1"}, {"127.0.0.1:5353"}},
        {{"--listen-address=127.0.0.1,::1", "--port=5353"}, {"127.0.0.1:5353", "[::1]:5353"}},
        {{"-a", "127.0.0.1", "-a", "127.0.0.2", "-a", "127.0.0.1"},
         {"127.0.0.1:53", "127.0.0.2:53"}},
        {{"--port=0", "-a", "127.0.0.1"}, {"127.0.0.1:0"}},
        // The last --port wins, as in dnsmasq.
        {{"--port=1", "--port=2", "-a", "127.0.0.1"}, {"127.0.0.1:2"}},
        // Other options and their values are left alone.
        {{"--server", "/p/127.0.0.1#1", "--address=/a/1.2.3.4", "-a", "127.0.0.1"},
         {"127.0.0.1:53"}},
    }));
    CAPTURE(args);
    CHECK(Addresses(Listen(args)) == addresses);
  }
  SECTION("--threads says how many socket pairs the child serves; 0 or none: its default") {
    auto [args, threads] = GENERATE(table<Args, size_t>({
        {{"-k"}, 0},
        {{"--threads=6"}, 6},
        {{"--threads", "16", "-a", "127.0.0.1"}, 16},
        {{"--threads=0"}, 0},
        // Not --threads: a longer option, and no short form to mistake "-" or "-t" for.
        {{"--threads-extra=3", "-t", "4"}, 0},
    }));
    CAPTURE(args);
    CHECK(Listen(args).threads == threads);
  }
  SECTION("a malformed value is a start-up error naming the option") {
    auto args = GENERATE(Args{"--port=x"}, Args{"--port=65536"}, Args{"--port"}, Args{"-p"},
                         Args{"--listen-address=localhost"}, Args{"-a", "1.2.3.4,"},
                         Args{"--listen-address"}, Args{"--threads=x"}, Args{"--threads=4x"},
                         Args{"--threads"}, Args{"--threads=-1"});
    CAPTURE(args);
    ListenSpec spec;
    std::string error;
    CHECK_FALSE(ParseListenSpec(args, &spec, &error));
    CHECK_THAT(error, Catch::StartsWith("child argument --"));
  }
}

TEST_CASE("a long option is found with or without its value", "[nanny]") {
  CHECK(HasLongOption({"-k", "--servers-file=/x"}, "servers-file"));
  CHECK(HasLongOption({"--servers-file", "/x"}, "servers-file"));
  CHECK_FALSE(HasLongOption({"--servers-filex=/x", "servers-file"}, "servers-file"));
}

namespace {

// A directory with the nanny's executable and an executable frontend-cache beside it, and a
// bin/ directory (for $PATH) with dnsmasq.
struct Install {
  Install() {
    std::filesystem::create_directories(dir.File("bin"));
    for (const char* name : {"nanny", "frontend-cache", "bin/dnsmasq"}) {
      std::ofstream(dir.File(name)) << "#!/bin/sh\n";
      std::filesystem::permissions(dir.File(name), std::filesystem::perms::owner_all);
    }
  }
  ExecutableSearch Search() const { return {dir.File("nanny"), dir.File("bin")}; }

  kdns::testing::TempDir dir;
};

std::string ErrorOf(const FlagValues& flags, const Args& child = {}) {
  Install install;
  Nanny::Options options;
  std::string error;
  if (BuildOptions(flags, child, install.Search(), &options, &error)) return "";
  return error;
}

}  // namespace

TEST_CASE("The nanny's default flags supervise frontend-cache in place", "[nanny][options]") {
  Install install;
  Nanny::Options options;
  std::string error;
  REQUIRE(BuildOptions({}, {"-k", "--port=1053"}, install.Search(), &options, &error));
  CHECK(options.config_dir == "/etc/k8s/dns/dnsmasq-nanny");
  CHECK(options.sync_interval_ms == 10'000);
  CHECK_FALSE(options.restart_on_change);
  CHECK(options.log_interval_ms == 0);
  CHECK(options.stub_refresh_ms == 60'000);
  CHECK(options.stub_retry_ms == 1'000);
  CHECK(options.crash_loop.max_fast_crashes == 5);
  CHECK(options.crash_loop.healthy_runtime_ms == 10'000);
  CHECK(options.stop_timeout_ms == 30'000);
  CHECK(options.cluster_domain == "cluster.local");
  CHECK(options.kubedns_server.ToString() == "127.0.0.1:10053");
  CHECK(options.mode == ApplyMode::kInPlace);
  CHECK(options.child_name == "frontend-cache");
  CHECK(options.child_argv == Args{install.dir.File("frontend-cache"), "-k", "--port=1053"});
  CHECK(options.trampoline == install.dir.File("nanny"));
  REQUIRE(options.listen.size() == 1);
  CHECK(options.listen[0].ToString() == "0.0.0.0:1053");
  CHECK(options.child_threads == 0);
}

TEST_CASE("Another child is found in PATH and restarted on change", "[nanny][options]") {
  Install install;
  FlagValues flags;
  flags.dnsmasq_exec = "dnsmasq";
  flags.kubedns_server = "10.0.0.10";  // port 53 when none is given
  flags.stub_resolve_interval = "500ms";
  Nanny::Options options;
  std::string error;
  REQUIRE(BuildOptions(flags, {"--servers-file=/x"}, install.Search(), &options, &error));
  CHECK(options.mode == ApplyMode::kRestart);
  CHECK(options.child_name == "dnsmasq");
  CHECK(options.child_argv.front() == install.dir.File("bin/dnsmasq"));
  CHECK(options.kubedns_server.ToString() == "10.0.0.10:53");
  CHECK(options.stub_retry_ms == 500);  // never later than the refresh
  CHECK(options.listen.empty());        // restart mode holds no sockets
}

TEST_CASE("Each bad nanny flag is one line naming it", "[nanny][options]") {
  FlagValues flags;
  Args child;
  std::string expected;
  SECTION("sync interval") {
    flags.sync_interval = "often";
    expected = "-syncInterval: not a duration: \"often\"";
  }
  SECTION("sync interval zero") {
    flags.sync_interval = "0s";
    expected = "-syncInterval: must be more than 0";
  }
  SECTION("log interval") {
    flags.log_interval = "1";
    expected = "-logInterval: not a duration: \"1\"";
  }
  SECTION("stub resolve interval zero") {
    flags.stub_resolve_interval = "0";
    expected = "-stubResolveInterval: must be more than 0";
  }
  SECTION("crash loop restarts") {
    flags.crash_loop_restarts = 0;
    expected = "-crashLoopRestarts: must be at least 1";
  }
  SECTION("crash loop runtime") {
    flags.crash_loop_runtime = "x";
    expected = "-crashLoopRuntime: not a duration: \"x\"";
  }
  SECTION("child stop timeout") {
    flags.child_stop_timeout = "y";
    expected = "-childStopTimeout: not a duration: \"y\"";
  }
  SECTION("kubedns server") {
    flags.kubedns_server = "kubedns:x";
    expected = "-kubednsServer: not an address: \"kubedns:x\"";
  }
  SECTION("child mode") {
    flags.child_mode = "sometimes";
    expected = "-childMode: auto, in-place or restart, not \"sometimes\"";
  }
  SECTION("an executable path that is not one") {
    flags.dnsmasq_exec = "/nonexistent/dnsmasq";
    expected = "-dnsmasqExec /nonexistent/dnsmasq: not an executable file";
  }
  SECTION("an executable name found nowhere") {
    flags.dnsmasq_exec = "unbound";
    expected = "-dnsmasqExec unbound: not found beside the nanny nor in PATH";
  }
  SECTION("a servers file in place") {
    child = {"--servers-file=/x"};
    expected = "--servers-file after \"--\": the nanny writes the child's servers file itself";
  }
  SECTION("a child port in place") {
    child = {"--port=x"};
    expected = "child argument --port: not a port: \"x\"";
  }
  CHECK(ErrorOf(flags, child) == expected);
}

TEST_CASE("-kubednsZones lists the zones routed to kubedns", "[nanny][options]") {
  Install install;
  Nanny::Options options;
  std::string error;
  FlagValues flags;
  flags.kubedns_zones = "ClusterSet.Local.,slice.local";
  REQUIRE(BuildOptions(flags, {}, install.Search(), &options, &error));
  CHECK(options.kubedns_zones == std::vector<std::string>{"clusterset.local", "slice.local"});
  flags.kubedns_zones = "";
  REQUIRE(BuildOptions(flags, {}, install.Search(), &options, &error));
  CHECK(options.kubedns_zones.empty());
  flags.kubedns_zones = "ok.local,bad..name";
  CHECK(ErrorOf(flags) == "-kubednsZones: not a domain name: \"bad..name\"");
}

}  // namespace kdns::nanny

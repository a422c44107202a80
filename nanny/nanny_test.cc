// The Nanny in process, with a shell script standing in for the child: the script prints
// its arguments and, in in-place mode, its servers file at start and at every SIGHUP.
#include "nanny/nanny.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/upstream/testing.h"
#include "nanny/fake_command_runner.h"
#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

using loop::testing::RunUntil;

const char* kFakeFrontendCache =
    "for a in \"$@\"; do case \"$a\" in --servers-file=*) f=\"${a#--servers-file=}\";; esac; "
    "done; "
    "trap 'echo reload; cat \"$f\"' HUP; "
    "trap 'echo stopping; kill $p 2>/dev/null; exit 0' TERM; "
    "echo start \"$@\"; cat \"$f\"; "
    "while :; do sleep 1000 & p=$!; wait $p; kill $p 2>/dev/null; done";

const char* kFakeDnsmasq =
    "trap 'echo stopping; kill $p 2>/dev/null; exit 0' TERM; echo start \"$@\"; "
    "while :; do sleep 1000 & p=$!; wait $p; kill $p 2>/dev/null; done";

// A ConfigMap volume as the kubelet writes it.
class Volume {
 public:
  explicit Volume(std::string dir) : dir_(std::move(dir)) {}
  void Publish(const std::map<std::string, std::string>& data) {
    const std::string version = "..2024_01_01_00_00_0" + std::to_string(++n_);
    std::filesystem::create_directory(dir_ + "/" + version);
    const std::filesystem::path version_dir = std::filesystem::path(dir_) / version;
    for (const auto& [key, value] : data) std::ofstream(version_dir / key) << value;
    std::filesystem::create_symlink(version, dir_ + "/..data_tmp");
    std::filesystem::rename(dir_ + "/..data_tmp", dir_ + "/..data");
    for (const auto& [key, value] : data) {
      std::error_code exists;
      std::filesystem::create_symlink("..data/" + key, dir_ + "/" + key, exists);
    }
    if (!current_.empty()) std::filesystem::remove_all(dir_ + "/" + current_);
    current_ = version;
  }

 private:
  std::string dir_;
  std::string current_;
  int n_ = 0;
};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Lines {
  std::vector<std::string> all;
  int Count(const std::string& line) const {
    return static_cast<int>(std::count(all.begin(), all.end(), line));
  }
  bool Has(const std::string& line) const { return Count(line) > 0; }
};

Nanny::Options BaseOptions(const std::string& config_dir, const std::string& run_dir,
                           const loop::SocketAddress& kubedns, Lines& lines) {
  Nanny::Options options;
  options.config_dir = config_dir;
  options.sync_interval_ms = 60'000;  // inotify only, unless a test says otherwise
  options.debounce_ms = 5;
  options.kubedns_server = kubedns;
  options.run_dir = run_dir;
  options.lookup_timeout_ms = 200;
  options.crash_loop = CrashLoop::Options{10'000, 3, 1, 10};
  options.on_child_line = [&lines](std::string_view line) { lines.all.emplace_back(line); };
  return options;
}

}  // namespace

TEST_CASE_METHOD(
    loop::testing::LoopFixture,
    "in place: every accepted change reaches the child by file and SIGHUP, bad ones never",
    "[nanny][process]") {
  kdns::testing::TempDir config_dir, run_dir;
  Volume volume(config_dir.path());
  volume.Publish({{"stubDomains", R"({"acme.local": ["10.0.0.1"]})"}});
  upstream::testing::FakeUpstream kubedns(loop, 53);
  Lines lines;
  auto options = BaseOptions(config_dir.path(), run_dir.path(), kubedns.address(), lines);
  options.mode = ApplyMode::kInPlace;
  options.child_argv = {"/bin/sh", "-c", kFakeFrontendCache, "sh", "-k"};
  options.listen = {*loop::SocketAddress::Parse("127.0.0.1:0")};
  Nanny nanny(loop, options);
  std::string error;
  REQUIRE(nanny.Start(&error));
  REQUIRE(RunUntil(loop, [&] { return lines.Has("server=/acme.local/10.0.0.1"); }));
  CHECK(lines.all.front() == "start -k --servers-file=" + nanny.servers_file() +
                                 " --metrics-textfile=" + nanny.metrics_file());
  CHECK(nanny.sockets().fds().size() == 2);
  CHECK(nanny.metrics().config_generation == 1);

  // A change: the file is rewritten and the child told, without a restart.
  volume.Publish({{"stubDomains", R"({"acme.local": ["10.0.0.2:5353"]})"},
                  {"upstreamNameservers", R"(["192.0.2.1"])"}});
  REQUIRE(RunUntil(loop, [&] { return lines.Has("server=192.0.2.1"); }));
  CHECK(lines.Count("reload") == 1);
  CHECK(lines.Has("server=/acme.local/10.0.0.2#5353"));
  CHECK(nanny.metrics().config_generation == 2);
  CHECK(nanny.metrics().reloads == 1);
  const std::string applied = Read(nanny.servers_file());

  // An invalid update: rejected, counted, the running configuration kept.
  volume.Publish({{"stubDomains", R"({"acme.local": ["not an address"]})"}});
  REQUIRE(RunUntil(loop, [&] { return nanny.metrics().config_updates_rejected == 1; }));
  CHECK(nanny.metrics().config_error);
  CHECK(Read(nanny.servers_file()) == applied);
  CHECK(nanny.metrics().config_generation == 2);
  const std::string metrics = Read(nanny.metrics_file());
  CHECK_THAT(metrics, Catch::Contains("kdns_nanny_config_updates_rejected_total 1\n"));
  CHECK_THAT(metrics, Catch::Contains("kdns_nanny_config_error 1\n"));
  CHECK_THAT(metrics, Catch::Contains("kdns_nanny_config_generation 2\n"));

  // A stub server named by host: asked of kubedns, then applied.
  volume.Publish({{"stubDomains", R"({"corp.example": ["ns.default.svc.cluster.local"]})"}});
  REQUIRE(RunUntil(loop, [&] { return lines.Has("server=/corp.example/192.0.2.53"); }));
  CHECK_FALSE(nanny.metrics().config_error);
  CHECK(nanny.metrics().config_generation == 3);
  CHECK(lines.Count("start -k --servers-file=" + nanny.servers_file() +
                    " --metrics-textfile=" + nanny.metrics_file()) == 1);  // never restarted

  // The same values again (white space aside from the routing): nothing to hand over.
  volume.Publish({{"stubDomains", R"({ "corp.example": ["ns.default.svc.cluster.local"] })"}});
  REQUIRE(RunUntil(loop, [&] {
    return nanny.metrics().config_version ==
           ConfigVersion({R"({ "corp.example": ["ns.default.svc.cluster.local"] })", {}});
  }));
  CHECK(nanny.metrics().config_generation == 3);

  nanny.Shutdown();
  REQUIRE(RunUntil(loop, [&] { return nanny.finished(); }));
  CHECK(nanny.exit_code() == 0);
  CHECK(lines.all.back() == "stopping");
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "restart mode: --server arguments, a stop before each start, or nothing without "
                 "-restartDnsmasq",
                 "[nanny][process]") {
  kdns::testing::TempDir config_dir, run_dir;
  Volume volume(config_dir.path());
  volume.Publish({{"upstreamNameservers", R"(["192.0.2.1:5353"])"}});
  const bool restart = GENERATE(true, false);
  CAPTURE(restart);
  upstream::testing::FakeUpstream kubedns(loop, 53);
  Lines lines;
  auto options = BaseOptions(config_dir.path(), run_dir.path(), kubedns.address(), lines);
  options.mode = ApplyMode::kRestart;
  options.restart_on_change = restart;
  options.child_argv = {"/bin/sh", "-c", kFakeDnsmasq, "sh", "-k"};
  Nanny nanny(loop, options);
  std::string error;
  REQUIRE(nanny.Start(&error));
  REQUIRE(
      RunUntil(loop, [&] { return lines.Has("start -k --server=192.0.2.1#5353 --no-resolv"); }));
  CHECK(nanny.sockets().fds().empty());  // dnsmasq binds its own

  volume.Publish({{"stubDomains", R"({"acme.local": ["10.0.0.1"]})"}});
  if (restart) {
    REQUIRE(RunUntil(loop, [&] { return lines.Has("start -k --server=/acme.local/10.0.0.1"); }));
    CHECK(lines.all == std::vector<std::string>{"start -k --server=192.0.2.1#5353 --no-resolv",
                                                "stopping",
                                                "start -k --server=/acme.local/10.0.0.1"});
    CHECK(nanny.metrics().config_generation == 2);
    CHECK(nanny.supervisor().config_restarts() == 1);
  } else {
    REQUIRE(RunUntil(loop, [&] {
      return nanny.seen_version() == ConfigVersion({R"({"acme.local": ["10.0.0.1"]})", {}});
    }));
    CHECK(lines.all.size() == 1);
    CHECK(nanny.metrics().config_generation == 1);
  }
  nanny.Shutdown();
  REQUIRE(RunUntil(loop, [&] { return nanny.finished(); }));
  CHECK(nanny.exit_code() == 0);
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "an unreadable or invalid directory at start-up means the default configuration",
                 "[nanny][process]") {
  kdns::testing::TempDir config_dir, run_dir;
  const bool invalid = GENERATE(true, false);
  if (invalid) std::ofstream(config_dir.File("upstreamNameservers")) << "[\"x\"]";
  upstream::testing::FakeUpstream kubedns(loop, 53);
  Lines lines;
  auto options = BaseOptions(invalid ? config_dir.path() : config_dir.File("missing"),
                             run_dir.path(), kubedns.address(), lines);
  options.mode = ApplyMode::kRestart;
  options.child_argv = {"/bin/sh", "-c", kFakeDnsmasq, "sh", "-k"};
  Nanny nanny(loop, options);
  std::string error;
  REQUIRE(nanny.Start(&error));
  REQUIRE(RunUntil(loop, [&] { return lines.Has("start -k"); }));
  CHECK(nanny.metrics().config_updates_rejected == (invalid ? 1 : 0));
  CHECK(nanny.metrics().config_read_errors == (invalid ? 0 : 1));
  nanny.Shutdown();
  REQUIRE(RunUntil(loop, [&] { return nanny.finished(); }));
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "a child that keeps crashing makes the nanny finish with status 1",
                 "[nanny][process]") {
  kdns::testing::TempDir config_dir, run_dir;
  upstream::testing::FakeUpstream kubedns(loop, 53);
  Lines lines;
  auto options = BaseOptions(config_dir.path(), run_dir.path(), kubedns.address(), lines);
  options.mode = ApplyMode::kRestart;
  options.child_argv = {"/bin/sh", "-c", "echo crash; exit 2"};
  int finished_with = -1;
  Nanny nanny(loop, options);
  nanny.set_on_finished([&](int code) { finished_with = code; });
  std::string error;
  REQUIRE(nanny.Start(&error));
  REQUIRE(RunUntil(loop, [&] { return nanny.finished(); }));
  CHECK(finished_with == 1);
  CHECK(lines.Count("crash") == 3);
  CHECK_THAT(Read(nanny.metrics_file()),
             Catch::Contains("kdns_nanny_child_restarts_total{reason=\"crash\"} 2\n"));
}

TEST_CASE_METHOD(loop::testing::LoopFixture,
                 "node-local: cluster zones to the upstream Service, rules gone before the "
                 "child stops, addresses after it",
                 "[nanny][process][node-local]") {
  kdns::testing::TempDir config_dir, run_dir;
  {
    Lines lines;
    // The central DNS's ClusterIP: only written into the routes here, never asked.
    auto options = BaseOptions(config_dir.path(), run_dir.path(),
                               *loop::SocketAddress::Parse("10.96.0.11:53"), lines);
    options.mode = ApplyMode::kInPlace;
    options.child_argv = {"/bin/sh", "-c", kFakeFrontendCache, "sh"};
    options.listen = {*loop::SocketAddress::Parse("127.0.0.1:0")};
    options.kubedns_zones = {"clusterset.local"};
    NodeLocal::Options node;
    node.addresses = {*IpAddress::Parse("127.0.0.1")};
    node.interface_name = "lo";
    node.firewall = FirewallChoice::kNftables;
    node.health_port = 0;
    node.open_nft_session = nullptr;  // the shared table, through the fake runner
    node.unix_listing = run_dir.File("unix");
    node.tcp_migrate_req_file = run_dir.File("tcp_migrate_req");  // never the host's
    options.node_local = node;
    testing::FakeCommandRunner runner;
    runner.handler = [&lines](const std::vector<std::string>& argv) -> CommandResult {
      lines.all.push_back("command: " + testing::Joined(argv));
      return {0, "", ""};
    };
    options.runner = &runner;
    options.interface_reader = [](const std::string&) {
      return InterfaceState{true, true, {*IpAddress::Parse("127.0.0.1")}};
    };
    Nanny nanny(loop, options);
    std::string error;
    REQUIRE(nanny.Start(&error));
    REQUIRE(RunUntil(loop, [&] { return lines.Has("server=/ip6.arpa/tcp://10.96.0.11#53"); }));
    CHECK(lines.Has("server=/cluster.local/tcp://10.96.0.11#53"));
    CHECK(lines.Has("server=/in-addr.arpa/tcp://10.96.0.11#53"));
    CHECK(lines.Has("server=/clusterset.local/tcp://10.96.0.11#53"));
    CHECK(lines.Has("command: nft -f " + run_dir.path() + "/nodelocal.nft"));
    REQUIRE(nanny.node_local() != nullptr);
    CHECK(nanny.node_local()->backend() == FirewallBackend::kNftables);
    CHECK_THAT(Read(nanny.metrics_file()),
               Catch::Contains("kdns_nodelocal_firewall_info{backend=\"nftables\"} 1\n"));

    nanny.Shutdown();
    REQUIRE(RunUntil(loop, [&] { return nanny.finished(); }));
    CHECK(nanny.exit_code() == 0);
    const auto removed = std::find(lines.all.begin(), lines.all.end(),
                                   "command: nft delete chain inet kdns-nodelocal raw-prerouting; "
                                   "delete chain inet kdns-nodelocal raw-output-queries; ");
    const auto stopping = std::find(lines.all.begin(), lines.all.end(), "stopping");
    const auto addresses_removed = std::find(lines.all.begin(), lines.all.end(),
                                             "command: ip -4 addr del 127.0.0.1/32 dev lo");
    const auto table_removed = std::find(lines.all.begin(), lines.all.end(),
                                         "command: nft delete table inet kdns-nodelocal");
    CHECK(stopping < table_removed);
    CHECK(table_removed < addresses_removed);
    CHECK(removed < stopping);
    CHECK(stopping < addresses_removed);
    CHECK(addresses_removed != lines.all.end());
  }
}

}  // namespace kdns::nanny

// The nanny relies on config::ReadConfigDir returning one version of the ConfigMap even while
// the kubelet swaps `..data` under it: here a writer thread publishes versions as fast as it
// can, the way the kubelet's atomic writer does, and every read must pair keys of the same
// version.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/config/kube_dns_config.h"
#include "test/unit/temp_dir.h"

namespace kdns::nanny {
namespace {

void Write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// Version n: stubDomains names v<n>.example, upstreamNameservers carries n in its address.
void Publish(const std::string& dir, int n, std::string* current) {
  const std::string version = "..2024_01_01_00_00_00." + std::to_string(n);
  const std::filesystem::path version_dir = std::filesystem::path(dir) / version;
  std::filesystem::create_directory(version_dir);
  Write(version_dir / "stubDomains", R"({"v)" + std::to_string(n) + R"(.example": ["10.0.0.1"]})");
  Write(version_dir / "upstreamNameservers", R"(["10.)" + std::to_string(n / 65536 % 256) + "." +
                                                 std::to_string(n / 256 % 256) + "." +
                                                 std::to_string(n % 256) + R"("])");
  std::filesystem::create_symlink(version, dir + "/..data_tmp");
  std::filesystem::rename(dir + "/..data_tmp", dir + "/..data");
  for (const char* key : {"stubDomains", "upstreamNameservers"}) {
    std::error_code exists;
    std::filesystem::create_symlink(std::string("..data/") + key, dir + "/" + key, exists);
  }
  if (!current->empty()) std::filesystem::remove_all(dir + "/" + *current);
  *current = version;
}

int VersionOf(const config::ConfigDirData& data) {
  const std::string& stubs = *data.stub_domains;
  const int from_stubs = std::stoi(stubs.substr(stubs.find("\"v") + 2));
  const std::string& up = *data.upstream_nameservers;
  size_t a = up.find('.') + 1, b = up.find('.', a) + 1, c = up.find('.', b) + 1;
  const int from_upstreams =
      std::stoi(up.substr(a)) * 65536 + std::stoi(up.substr(b)) * 256 + std::stoi(up.substr(c));
  return from_stubs == from_upstreams ? from_stubs : -1;
}

}  // namespace

TEST_CASE("every read of a ConfigMap swapped under it is one consistent version", "[nanny]") {
  kdns::testing::TempDir dir;
  std::string current;
  Publish(dir.path(), 0, &current);
  std::atomic<bool> stop{false};
  std::atomic<int> published{0};
  std::thread writer([&] {
    std::string mine = current;
    for (int n = 1; !stop.load(); ++n) {
      Publish(dir.path(), n, &mine);
      published.store(n);
    }
  });
  int consistent = 0, mixed = 0, gave_up = 0, other_errors = 0, last = -1, backwards = 0;
  std::string other;
  for (int i = 0; i < 20000 && !(consistent > 2000 && published.load() > 2000); ++i) {
    config::ConfigDirData data;
    std::string error;
    if (!config::ReadConfigDir(dir.path(), &data, &error)) {
      if (error.find("changed while reading") != std::string::npos) {
        ++gave_up;
      } else {
        ++other_errors;
        other = error;
      }
      continue;
    }
    REQUIRE(data.stub_domains.has_value());
    REQUIRE(data.upstream_nameservers.has_value());
    const int version = VersionOf(data);
    if (version < 0) {
      ++mixed;
      continue;
    }
    ++consistent;
    if (version < last) ++backwards;
    last = version;
  }
  stop = true;
  writer.join();
  INFO("consistent " << consistent << ", gave up " << gave_up << ", versions published "
                     << published.load() << ", other error: " << other);
  CHECK(mixed == 0);
  CHECK(backwards == 0);
  CHECK(other_errors == 0);
  CHECK(consistent > 0);
  CHECK(published.load() > 0);
}

}  // namespace kdns::nanny

// dnsload's shared parts (see dnsload_bench.cc): constants, clocks, sockets and the command
// line. Header-only, because the Makefile builds each test/bench/*_bench.cc as one binary.
// Thread: any; plain functions and value types.
#pragma once

// which side was the bottleneck.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/types.h"

namespace kdns::bench::dnsload {

using kdns::IpAddress;
namespace dns = kdns::dns;

inline constexpr size_t kBatch = 64;          // datagrams per recvmmsg/sendmmsg call
inline constexpr size_t kMaxDatagram = 4096;  // receive buffer per datagram
inline constexpr size_t kMaxAnswer = 1232;    // what the responder writes at most
inline constexpr size_t kIdSpace = 65536;     // DNS IDs per socket
inline constexpr int kSocketBufferBytes = 4 << 20;

[[noreturn]] inline void Fail(const std::string& message) {
  std::fprintf(stderr, "dnsload: %s\n", message.c_str());
  std::exit(2);
}

inline uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

inline sockaddr_in LoopbackAddress(uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

inline int UdpSocket() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail(std::string("socket: ") + std::strerror(errno));
  // Best effort: unprivileged processes are capped at net.core.[rw]mem_max.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  return fd;
}

// --- command line ----------------------------------------------------------------------

// "--name value" and "--name=value"; flags without a value map to "".
class Arguments {
 public:
  Arguments(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (!arg.starts_with("--")) Fail("unexpected argument \"" + std::string(arg) + "\"");
      arg.remove_prefix(2);
      size_t equals = arg.find('=');
      if (equals != std::string_view::npos) {
        values_.emplace_back(std::string(arg.substr(0, equals)),
                             std::string(arg.substr(equals + 1)));
      } else if (IsFlag(arg) || i + 1 == argc) {
        values_.emplace_back(std::string(arg), "");
      } else {
        values_.emplace_back(std::string(arg), argv[++i]);
      }
    }
  }

  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  std::string String(std::string_view name, const std::string& fallback = "") const {
    const std::string* value = Find(name);
    return value ? *value : fallback;
  }
  double Number(std::string_view name, double fallback) const {
    const std::string* value = Find(name);
    if (value == nullptr) return fallback;
    char* end = nullptr;
    double number = std::strtod(value->c_str(), &end);
    if (value->empty() || *end != '\0' || number < 0) {
      Fail("--" + std::string(name) + ": \"" + *value + "\" is not a non-negative number");
    }
    return number;
  }

 private:
  static bool IsFlag(std::string_view name) { return name == "once"; }
  const std::string* Find(std::string_view name) const {
    for (const auto& [key, value] : values_) {
      if (key == name) return &value;
    }
    return nullptr;
  }
  std::vector<std::pair<std::string, std::string>> values_;
};

}  // namespace kdns::bench::dnsload

// HostResolver: looks up a host name's address with c-ares, driven by the nanny's libuv
// loop (uv_poll_t per c-ares socket, one uv_timer_t for c-ares's timeouts: Envoy's and
// Node's pattern; c-ares's timeouts checked on a short tick while lookups are pending). The nanny
// keeps two: one asking kubedns (-kubednsServer) for names under the cluster domain, as kube-dns's
// nanny does, and one with the system's configuration
// (/etc/resolv.conf and /etc/hosts) for every other name.
//
// The answer is one address, as kube-dns takes the first one Go's resolver returns: the
// first IPv4 address when there is one, else the first IPv6 address.
//
// Thread: the loop's thread only. Callbacks run on it and must not destroy the resolver;
// destroying the resolver drops pending lookups without calling their callbacks.
#pragma once

#include <ares.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/ip_address.h"
#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"

namespace kdns::nanny {

class HostResolver {
 public:
  static constexpr uint64_t kTickMs = 50;  // how often c-ares checks its timeouts

  struct Options {
    // Ask only this server (no search list, no hosts file); nullopt: the system's
    // resolv.conf and hosts file, with its search list.
    std::optional<loop::SocketAddress> server;
    uint64_t timeout_ms = 2000;  // per try
    int tries = 2;
  };

  // address, or nullopt with a one-line error ("ns.example: Domain name not found").
  using Callback =
      std::function<void(const std::optional<IpAddress>& address, const std::string& error)>;

  // nullptr with *error when c-ares cannot be set up.
  [[nodiscard]] static std::unique_ptr<HostResolver> Create(loop::Loop& loop,
                                                            const Options& options,
                                                            std::string* error);
  ~HostResolver();
  HostResolver(const HostResolver&) = delete;
  HostResolver& operator=(const HostResolver&) = delete;

  void Resolve(const std::string& name, Callback callback);
  size_t pending() const { return pending_; }

 private:
  struct Poll {
    HostResolver* owner = nullptr;
    ares_socket_t fd = ARES_SOCKET_BAD;
    uv_poll_t* handle = nullptr;
  };
  struct Request {
    HostResolver* owner = nullptr;
    std::string name;
    Callback callback;
  };

  explicit HostResolver(loop::Loop& loop);
  static void OnSocketState(void* data, ares_socket_t fd, int readable, int writable) noexcept;
  static void OnPoll(uv_poll_t* handle, int status, int events) noexcept;
  static void OnAddrInfo(void* arg, int status, int timeouts, ares_addrinfo* result) noexcept;
  void Process(ares_socket_t read_fd, ares_socket_t write_fd);
  void ArmTimer();

  loop::Loop& loop_;
  ares_channel channel_ = nullptr;
  loop::Timer timer_;
  std::map<ares_socket_t, std::unique_ptr<Poll>> polls_;
  size_t pending_ = 0;
  bool destroying_ = false;
};

}  // namespace kdns::nanny

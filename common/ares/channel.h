// Channel: c-ares, driven by a kdns::loop Loop; the one c-ares wrapper of the tree (the
// pattern of node's cares_wrap and envoy's c-ares resolver). c-ares reports the sockets it
// wants watched through ARES_OPT_SOCK_STATE_CB and each gets a loop::FdWatch; readiness
// goes back through ares_process_fd, and one Timer armed from ares_timeout() drives
// c-ares's timeouts. c-ares does the client work we want from a real resolver library:
// random query IDs, reply matching (ID and question), TCP retry of a truncated UDP reply,
// and the error statuses (ECONNREFUSED, ETIMEOUT, ...).
//
// Two kinds of question:
//  - Send: a whole DNS query to the configured servers; the reply comes back whatever its
//    rcode (ARES_FLAG_NOCHECKRESP): the caller decides what a SERVFAIL or an NXDOMAIN means
//    (the sidecar's probes look at the answer section only, as kube-dns's do).
//  - LookupAddresses: a host name's IPv4 and IPv6 addresses (ares_getaddrinfo), as the
//    nanny and kubedns resolve stub server names.
// Options::servers chooses whom to ask: given servers only (no search list, no hosts file,
// nothing from resolv.conf), or, when empty, the system's configuration (/etc/resolv.conf
// with its search list, and /etc/hosts).
//
// Ownership: the Channel owns the c-ares channel, one FdWatch per c-ares socket and its
// timer. Destroying it cancels the queries in flight without calling their callbacks. A
// callback must not destroy the channel (c-ares cannot be destroyed from inside its own
// processing; CHECKed); it may ask more questions.
//
// Thread: the loop's thread only.
#pragma once

#include <ares.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/base/ip_address.h"
#include "common/loop/fd_watch.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"

namespace kdns::ares {

class Channel {
 public:
  struct Options {
    // Ask only these, in order; empty: the system's resolv.conf, search list and hosts file.
    std::vector<loop::SocketAddress> servers;
    // Per try, over UDP and over TCP; kube-dns's Go client waits 2 s.
    uint64_t timeout_ms = 2000;
    int tries = 1;
  };

  struct Reply {
    int status = ARES_SUCCESS;   // ARES_SUCCESS: a reply arrived (any rcode)
    std::vector<uint8_t> bytes;  // the reply, when status is ARES_SUCCESS
    uint64_t latency_ns = 0;     // from Send to the callback
  };
  using ReplyCallback = std::function<void(Reply reply)>;

  // The addresses in the order c-ares found them (no sorting), or none with a one-line
  // error ("ns.example: Domain name not found").
  using AddressCallback =
      std::function<void(const std::vector<IpAddress>& addresses, const std::string& error)>;

  // nullptr with *error when c-ares cannot be set up.
  [[nodiscard]] static std::unique_ptr<Channel> Create(loop::Loop& loop, const Options& options,
                                                       std::string* error);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Sends `query` (a whole DNS message; c-ares puts its own ID in) and calls `callback`
  // once with the outcome. An immediate failure (a malformed query) is reported before
  // Send returns.
  void Send(std::span<const uint8_t> query, ReplyCallback callback);
  // Looks up the A and AAAA addresses of `name`; the callback runs once, never from inside
  // LookupAddresses unless the name is numeric or in the hosts file.
  void LookupAddresses(const std::string& name, AddressCallback callback);

  size_t in_flight() const { return in_flight_; }
  const Options& options() const { return options_; }
  // Sockets c-ares has open right now (each with its FdWatch).
  size_t open_sockets() const { return watches_.size(); }

  // "timeout", "connection refused", ... for a c-ares status: ares_strerror, lower-cased.
  static std::string StatusText(int status);

 private:
  struct PendingReply;
  struct PendingLookup;

  Channel(loop::Loop& loop, const Options& options);
  static void OnSocketState(void* data, ares_socket_t fd, int readable, int writable) noexcept;
  static void OnAnswer(void* arg, int status, int timeouts, unsigned char* abuf, int alen) noexcept;
  static void OnAddrInfo(void* arg, int status, int timeouts, ares_addrinfo* result) noexcept;
  void Process(ares_socket_t read_fd, ares_socket_t write_fd);
  void ArmTimer();

  loop::Loop& loop_;
  Options options_;
  ares_channel channel_ = nullptr;
  std::map<ares_socket_t, std::unique_ptr<loop::FdWatch>> watches_;
  loop::Timer timer_;
  size_t in_flight_ = 0;
  int processing_ = 0;  // nesting depth of calls into c-ares that may run callbacks
  bool destroying_ = false;
};

}  // namespace kdns::ares

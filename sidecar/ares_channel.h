// AresChannel: one c-ares channel that sends raw DNS queries to one server, driven by a
// kdns::loop Loop (the pattern of node's cares_wrap and envoy's c-ares resolver): c-ares
// reports the sockets it wants watched through ARES_OPT_SOCK_STATE_CB, each gets a
// uv_poll_t, readiness goes back through ares_process_fd, and one Timer armed from
// ares_timeout() drives c-ares's timeouts. c-ares does the client work we want from a
// real resolver library: random query IDs, reply matching (ID and question), TCP retry of
// a truncated UDP reply, and the error statuses (ECONNREFUSED, ETIMEOUT, ...).
//
// Replies are handed back whatever their rcode (ARES_FLAG_NOCHECKRESP): the caller
// decides what a SERVFAIL or an NXDOMAIN means (the sidecar's probes look at the answer
// section only, as kube-dns's do).
//
// Ownership: the channel owns the c-ares channel, its poll handles (closed with uv_close,
// freed in the close callback) and its timer. Destroying it cancels the queries in flight
// without calling their callbacks. A callback must not destroy the channel (c-ares cannot
// be destroyed from inside its own processing; CHECKed); it may send more queries.
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

#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"

namespace kdns::sidecar {

class AresChannel {
 public:
  struct Options {
    loop::SocketAddress server;
    // Per try, over UDP and over TCP; kube-dns's Go client waits 2 s.
    uint64_t timeout_ms = 2000;
    int tries = 1;
  };

  struct Reply {
    int status = ARES_SUCCESS;   // ARES_SUCCESS: a reply arrived (any rcode)
    std::vector<uint8_t> bytes;  // the reply, when status is ARES_SUCCESS
    uint64_t latency_ns = 0;     // from Send to the callback
  };
  using Callback = std::function<void(Reply reply)>;

  // nullptr with *error when c-ares cannot be set up.
  [[nodiscard]] static std::unique_ptr<AresChannel> Create(loop::Loop& loop, const Options& options,
                                                           std::string* error);
  ~AresChannel();
  AresChannel(const AresChannel&) = delete;
  AresChannel& operator=(const AresChannel&) = delete;

  // Sends `query` (a whole DNS message; c-ares puts its own ID in) and calls `callback`
  // once with the outcome. An immediate failure (a malformed query) is reported before
  // Send returns.
  void Send(std::span<const uint8_t> query, Callback callback);

  size_t in_flight() const { return in_flight_; }
  const loop::SocketAddress& server() const { return options_.server; }
  // Sockets c-ares has open right now (each with its poll handle).
  size_t open_sockets() const { return polls_.size(); }

  // "timeout", "connection refused", ... for a c-ares status: ares_strerror, lower-cased.
  static std::string StatusText(int status);

 private:
  struct Pending;

  AresChannel(loop::Loop& loop, const Options& options);
  static void OnSocketState(void* data, ares_socket_t fd, int readable, int writable) noexcept;
  static void OnPoll(uv_poll_t* handle, int status, int events) noexcept;
  static void OnAnswer(void* arg, int status, int timeouts, unsigned char* abuf, int alen) noexcept;
  void Process(ares_socket_t read_fd, ares_socket_t write_fd);
  void ArmTimer();

  loop::Loop& loop_;
  Options options_;
  ares_channel channel_ = nullptr;
  std::map<ares_socket_t, uv_poll_t*> polls_;
  loop::Timer timer_;
  size_t in_flight_ = 0;
  int processing_ = 0;  // nesting depth of calls into c-ares that may run callbacks
  bool destroying_ = false;
};

}  // namespace kdns::sidecar

// UdpSocketPool: the connected UDP sockets one Forwarder uses for one upstream server, so a
// forwarded query costs no socket(), connect(), epoll_ctl() and close() of its own.
//
// Source-port randomisation (RFC 5452 §9.2) stays: every socket is bound by the kernel to a
// random ephemeral port, each query goes out on a socket picked at random among up to
// Options::sockets, with a random ID unique among the queries waiting on that socket, and a
// socket is retired (a new one on a new random port takes its slot) after
// Options::queries_per_socket queries or Options::max_age_ms, whichever comes first. An
// off-path attacker who cannot see our traffic must still guess port and ID (and question
// and its random 0x20 case: wire.h, dns0x20.h); one who learns a port (through a side
// channel: the ports stay open) can use it for at most that many queries or that long.
// queries_per_socket = 1 is a fresh socket per query: it measured 2.5 times the CPU per
// miss, so 0x20 on reused sockets was chosen instead (docs/design.md, §7 "Spoofing").
//
// Each socket is connect()ed to the server: the kernel drops datagrams from any other
// address or port, and an ICMP "port unreachable" comes back as a receive error. A datagram
// is handed to the Waiter registered under its ID on that socket; one whose ID nobody waits
// for (spoofed, or a late reply to a try already reaped) goes to on_unknown. A receive
// error fails every Waiter of that socket (they all asked the same server) and retires it;
// so does a send error other than a full buffer. Retired sockets close once no Waiter is
// registered on them.
//
// Ownership: the Forwarder owns one pool per server; Waiters (its Attempts) are owned by the
// Forwarder and must Release() before they go, unless the pool goes first (its destructor
// touches no Waiter). Thread: the loop's thread only. Callbacks run
// from the loop, never from inside Acquire or Send; they may Acquire, Release and Send again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/udp_batch.h"
#include "common/upstream/random.h"
#include "common/upstream/udp_client.h"

namespace kdns::upstream {

class UdpSocketPool {
 public:
  struct Options {
    size_t sockets = 16;                // sockets open at once (not counting retired ones)
    uint32_t queries_per_socket = 100;  // then the socket is retired
    uint64_t max_age_ms = 10'000;       // or when this old
  };
  struct Socket;
  // Whoever waits for a reply: registered under (socket, id) between Acquire and Release.
  struct Waiter {
    Socket* socket = nullptr;
    uint16_t id = 0;
  };
  struct Callbacks {
    // A datagram from the server carrying `waiter`'s ID; valid during the call only.
    std::function<void(Waiter* waiter, std::span<const uint8_t> datagram)> on_datagram;
    // A datagram too short to carry an ID, or one cut short by the receive buffer.
    std::function<void()> on_malformed;
    // A datagram whose ID nobody waits for on its socket.
    std::function<void()> on_unknown;
    // A receive error (negative libuv code) on a socket, with the Waiters that were on it:
    // they are released already, and the socket retired.
    std::function<void(std::span<Waiter* const> waiters, int status)> on_error;
  };

  // `receive` (shared by the sockets, see UdpClient) and `random` must outlive the pool.
  UdpSocketPool(loop::Loop& loop, const loop::SocketAddress& peer, const Options& options,
                loop::internal::UdpReceiveBatch& receive, SecureRandom& random,
                Callbacks callbacks);
  ~UdpSocketPool();
  UdpSocketPool(const UdpSocketPool&) = delete;
  UdpSocketPool& operator=(const UdpSocketPool&) = delete;

  // Registers `waiter` on a random socket (opening one when its slot is empty or due for
  // rotation) under a random ID unique there, which it writes into waiter->id. False with
  // *error when no socket could be opened.
  [[nodiscard]] bool Acquire(Waiter* waiter, uint64_t now_ms, std::string* error);
  // Sends on the waiter's socket: 0 or a negative libuv code. An error other than a full
  // socket buffer retires the socket (the waiter stays registered until Release).
  [[nodiscard]] int Send(Waiter* waiter, std::span<const uint8_t> bytes);
  // Unregisters `waiter`; a no-op when it is not registered.
  void Release(Waiter* waiter);

  // For tests and metrics.
  size_t open_sockets() const;  // in their slots, usable
  size_t retired_sockets() const { return retired_.size(); }
  uint64_t sockets_opened() const { return sockets_opened_; }
  // The local port of `waiter`'s socket (a system call: tests only); 0 if not registered.
  uint16_t local_port(const Waiter* waiter) const;

 private:
  void OnDatagram(Socket* socket, std::span<const uint8_t> datagram);
  void OnError(Socket* socket, int status);
  void Retire(Socket* socket);
  // Closes retired sockets nobody waits on, unless a pool callback is running (a socket is
  // never destroyed under its own callback).
  void CloseIdleRetired();

  loop::Loop& loop_;
  loop::SocketAddress peer_;
  Options options_;
  loop::internal::UdpReceiveBatch& receive_;
  SecureRandom& random_;
  Callbacks callbacks_;
  std::vector<std::unique_ptr<Socket>> slots_;    // Options::sockets, nullptr when empty
  std::vector<std::unique_ptr<Socket>> retired_;  // until their last Waiter is released
  uint64_t sockets_opened_ = 0;
  int dispatching_ = 0;  // inside a socket's callback or a pool callback
  struct Dispatching {
    explicit Dispatching(UdpSocketPool* owner) : pool(owner) { ++pool->dispatching_; }
    ~Dispatching() { --pool->dispatching_; }
    Dispatching(const Dispatching&) = delete;
    Dispatching& operator=(const Dispatching&) = delete;
    UdpSocketPool* pool;
  };
};

// One pooled socket and who waits on it.
struct UdpSocketPool::Socket {
  std::unique_ptr<UdpClient> client;
  uint32_t queries = 0;  // registered so far
  uint64_t opened_ms = 0;
  bool retired = false;
  // (ID, waiter): a handful per socket, so a linear scan beats a map and allocates nothing
  // once grown.
  std::vector<std::pair<uint16_t, Waiter*>> waiting;
};

}  // namespace kdns::upstream

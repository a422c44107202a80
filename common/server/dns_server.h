// DnsServer: the multi-threaded DNS serving skeleton shared by kubedns and frontend-cache.
// N threads, each running its own libuv loop with a LoopServer (a UDP socket, a TCP
// listener, the thread's QueryHandler); the protocol logic lives in the handlers.
//
// Sockets. By default every thread binds its own UDP and TCP socket to the same address
// and port with SO_REUSEPORT. Before that, Start() binds plain (non-REUSEPORT) UDP and TCP
// sockets to the address and closes them again: SO_REUSEPORT alone would let us silently
// join another process's group on that port (an old instance of ours, say) instead of
// failing, and with port 0 this picks a port free for both protocols. The kernel then
// spreads clients over the threads by a hash of the 4-tuple, so one client's flow always
// reaches the same thread, and a thread never wakes for another's packet.
//
// Inherited sockets (Options::inherited, e.g. from a supervisor handing the listening
// sockets to a new child) come as one UDP and TCP pair, or as a SO_REUSEPORT pair per
// thread (InheritedPairsFor says which a supervisor hands; the second serves exactly as
// sockets bound here do, one pair per thread, and sets the thread count). One pair: every
// thread serves a dup() of the same UDP socket and of the same TCP listening socket. A dup
// is the same kernel socket, so there is one receive queue and one accept queue shared by
// all threads: a datagram or connection wakes every thread's epoll (no EPOLLEXCLUSIVE in
// libuv), the first recvmmsg/accept takes it and the others get EAGAIN. Load spreads to
// whichever thread is free, at the cost of those spurious wake-ups; there is no per-flow
// affinity. Start() consumes the inherited fds. Options::shared_sockets serves the same
// way from one pair bound here. With UDP receiver
// threads (UdpOptions::receiver_thread) on one shared socket, the threads' receivers take
// turns as leader and followers (loop::UdpReceiverGroup) rather than all waiting on it.
// Sharing stops at kMaxThreadsOnSharedSocket threads; more get a SO_REUSEPORT pair each.
// One socket is one receive queue, written by every client's packet and read by one
// leader at a time: its kernel lock and memory counters are written from every core for
// every datagram, and reads take turns, so throughput stops growing after a few threads
// (issue 32, on 16 cores: kubedns 2.2 times one thread's at 4 threads, less at 8). Turns
// pay only where cores are few: they keep a light load on one thread, in large batches.
//
// DNS over TCP limits (TcpOptions) hold for all threads together: the threads share one
// loop::TcpConnectionCaps and one loop::OutputBudget (the options' own, if set).
//
// Shutdown: Stop() asks every loop to stop, then each thread destroys its LoopServer (the
// handler first) and closes its loop, which must end with no handle left (logged at ERROR
// otherwise, and reported by closed_cleanly()); then Stop() joins the threads.
//
// Thread: construct, Start and destroy on one owning thread. Stop(), Post() and stats()
// may be called from any thread once Start() has returned; Stop() blocks until every
// serving thread has ended, so a serving thread itself calls RequestStop() instead.
#pragma once

#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/loop/socket_address.h"
#include "common/loop/task_queue.h"
#include "common/server/loop_server.h"
#include "common/server/query_handler.h"
#include "common/server/stats.h"

namespace kdns::server {

// The DNS threads of a server whose flag `flag` (e.g. "--threads") asks for `requested`:
// that many, or for 0 DefaultThreads(), logged in one line that names the flag. Once per
// program, before its DnsServers start.
size_t ServingThreads(size_t requested, std::string_view flag);

class DnsServer {
 public:
  struct InheritedSockets {
    int udp_fd = -1;  // a bound UDP socket
    int tcp_fd = -1;  // a bound, possibly already listening, TCP socket
  };

  struct Options {
    // IPv4 or IPv6 address and port to bind (ignored with `inherited`).
    loop::SocketAddress listen_address;
    // 0: DefaultThreads() (common/base/cpu_quota.h: one per CPU of the CPU limit, else per
    // core, at most 8); programs resolve their flag with ServingThreads instead.
    size_t threads = 0;
    UdpOptions udp;
    TcpOptions tcp;
    // What every query is checked for before the handler sees it (admission.h).
    AdmissionPolicy admission;
    // Whose client-address option names the client (admission.h); by default no one's.
    ClientAddressPolicy client_address;
    // The process's rate limits (LoopServer::Options), shared by all threads; null: none.
    std::shared_ptr<ClientLimiter> clients;
    std::shared_ptr<ResponseRateLimiter> responses;
    // Sockets to serve instead of binding listen_address: none, one pair for every thread
    // to serve dups of, or one pair per thread (their count is then the thread count).
    std::vector<InheritedSockets> inherited;
    // Bind one UDP and one TCP socket and serve dups of them from every thread, as with
    // inherited sockets, instead of a SO_REUSEPORT pair per thread; only up to
    // kMaxThreadsOnSharedSocket threads (see "Sockets" above).
    bool shared_sockets = false;
  };

  // The most threads that Options::shared_sockets puts on one socket.
  static constexpr size_t kMaxThreadsOnSharedSocket = 2;

  // How many pairs of sockets on one address a supervisor hands a child that serves with
  // `threads` threads: one they share, as shared_sockets, up to kMaxThreadsOnSharedSocket;
  // past it, one SO_REUSEPORT pair per thread, as the child would bind itself.
  static constexpr size_t InheritedPairsFor(size_t threads) {
    return threads <= kMaxThreadsOnSharedSocket ? 1 : threads;
  }

  DnsServer(const Options& options, HandlerFactory factory);
  // Stops and joins if still running.
  ~DnsServer();
  DnsServer(const DnsServer&) = delete;
  DnsServer& operator=(const DnsServer&) = delete;

  // Starts the threads and returns once every one of them is bound and serving. False with
  // a one-line *error (port in use, bad inherited fd, ...) and no thread left running.
  // Once only.
  [[nodiscard]] bool Start(std::string* error);

  // Asks every thread to stop, without waiting. Any thread, also a serving one.
  void RequestStop();
  // RequestStop(), then joins every thread. Idempotent; any thread but a serving one.
  void Stop();

  // Runs `task` on serving thread `thread_index` (< thread_count()), e.g. to hand the
  // handler new configuration. False (task dropped) if that thread is not running.
  bool Post(size_t thread_index, loop::TaskQueue::Task task) const;

  size_t thread_count() const { return threads_.size(); }
  // The UDP address served (after Start). Bound sockets share it with TCP; inherited ones
  // may differ, see tcp_address().
  const loop::SocketAddress& local_address() const { return udp_address_; }
  const loop::SocketAddress& tcp_address() const { return tcp_address_; }

  // Counters summed over the threads / of one thread. Any thread, also after Stop().
  ServerStats stats() const;
  ServerStats thread_stats(size_t thread_index) const;

  // After Stop(): every loop closed with no handle left.
  bool closed_cleanly() const;

 private:
  struct Thread {
    size_t index = 0;
    std::thread thread;
    ThreadStats stats;
    // Set before Start() returns (or before the thread ends); read-only afterwards.
    loop::TaskQueue::Poster poster;
    loop::Loop* loop = nullptr;  // dereferenced only by tasks running on that loop
    loop::SocketAddress udp_address;
    loop::SocketAddress tcp_address;
    bool closed_cleanly = false;  // written by the thread before it ends, read after join
  };

  struct StartResult {
    std::string error;  // empty: serving
  };

  // Starts `thread` and waits until it serves or has failed (and then joins it).
  [[nodiscard]] StartResult StartThread(Thread& thread, const LoopServer::Options& options);
  void Run(Thread* thread, const LoopServer::Options& options, std::promise<StartResult>* started);
  void JoinAll();

  Options options_;
  HandlerFactory factory_;
  std::vector<std::unique_ptr<Thread>> threads_;
  loop::SocketAddress udp_address_;
  loop::SocketAddress tcp_address_;
  bool started_ = false;
  std::mutex stop_mu_;  // serialises Stop() callers around join
};

}  // namespace kdns::server

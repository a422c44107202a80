#include "common/server/dns_server.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "common/base/cpu_quota.h"
#include "common/base/thread_name.h"
#include "common/loop/loop.h"
#include "common/loop/socket_util.h"

namespace kdns::server {
namespace {

// The server whose loop runs on this thread, so Stop() can refuse to join itself.
thread_local const DnsServer* serving_server = nullptr;

constexpr int kPortZeroAttempts = 16;

// SO_REUSEPORT does not make a bind fail when another socket of the same user already
// serves the port with SO_REUSEPORT: the new socket silently joins that group and gets a
// share of its traffic (an old instance still running, or, with port 0, whichever group
// the kernel's UDP port choice lands on). So first bind plain UDP and TCP sockets, which
// fail on any other socket, then close them and bind the SO_REUSEPORT ones. Returns the
// address with its port (chosen when 0), or nullopt with a one-line *error.
std::optional<loop::SocketAddress> ClaimAddress(const loop::SocketAddress& address,
                                                std::string* error) {
  for (int attempt = 0; attempt < kPortZeroAttempts; ++attempt) {
    int udp = loop::internal::CreateBoundSocket(SOCK_DGRAM, address, loop::ReusePort::kNo, error);
    if (udp < 0) {
      *error = "UDP: " + *error;
      return std::nullopt;
    }
    loop::SocketAddress claimed = loop::internal::LocalAddressOf(udp);
    int tcp = loop::internal::CreateBoundSocket(SOCK_STREAM, claimed, loop::ReusePort::kNo, error);
    close(udp);
    if (tcp >= 0) {
      close(tcp);
      return claimed;
    }
    // With port 0, the port free for UDP may be taken for TCP: try another.
    if (address.port() != 0) break;
  }
  *error = "TCP: " + *error;
  return std::nullopt;
}

// Options::shared_sockets: one UDP and one TCP socket on `address` (the same port when 0),
// both plain (no SO_REUSEPORT), kept open for the threads to dup. False with *error.
bool BindShared(const loop::SocketAddress& address, int* udp_fd, int* tcp_fd, std::string* error) {
  for (int attempt = 0; attempt < kPortZeroAttempts; ++attempt) {
    int udp = loop::internal::CreateBoundSocket(SOCK_DGRAM, address, loop::ReusePort::kNo, error);
    if (udp < 0) {
      *error = "UDP: " + *error;
      return false;
    }
    const loop::SocketAddress bound = loop::internal::LocalAddressOf(udp);
    int tcp = loop::internal::CreateBoundSocket(SOCK_STREAM, bound, loop::ReusePort::kNo, error);
    if (tcp >= 0) {
      *udp_fd = udp;
      *tcp_fd = tcp;
      return true;
    }
    close(udp);
    if (address.port() != 0) break;  // with port 0, try another port free for both
  }
  *error = "TCP: " + *error;
  return false;
}

}  // namespace

size_t ServingThreads(size_t requested, std::string_view flag) {
  if (requested != 0) return requested;
  const DefaultThreadCount chosen = DefaultThreads();
  LOG(INFO) << DescribeDefaultThreads(chosen, flag);
  return chosen.threads;
}

DnsServer::DnsServer(const Options& options, HandlerFactory factory)
    : options_(options), factory_(std::move(factory)) {}

DnsServer::~DnsServer() { Stop(); }

bool DnsServer::Start(std::string* error) {
  CHECK(!started_) << "DnsServer::Start called twice";
  started_ = true;
  // The container's CPU allowance, not the node's cores (common/base/cpu_quota.h): the
  // programs pass their count (ServingThreads); 0 (tests) takes the default here.
  size_t count = options_.threads;
  if (count == 0) {
    const DefaultThreadCount chosen = DefaultThreads();
    count = chosen.threads;
    LOG(INFO) << "DNS on " << options_.listen_address.ToString() << ": "
              << DescribeDefaultThreads(chosen, "DnsServer::Options::threads");
  }
  // Past kMaxThreadsOnSharedSocket, a SO_REUSEPORT pair per thread, as without sharing.
  const bool shared = options_.shared_sockets && !options_.inherited.has_value() &&
                      count <= kMaxThreadsOnSharedSocket;
  if (shared) {
    if (!options_.listen_address.is_v4() && !options_.listen_address.is_v6()) {
      *error = "DNS server: the listen address is not IPv4 or IPv6";
      return false;
    }
    InheritedSockets sockets;
    if (!BindShared(options_.listen_address, &sockets.udp_fd, &sockets.tcp_fd, error)) {
      *error = "DNS server on " + options_.listen_address.ToString() + ": " + *error;
      return false;
    }
    options_.inherited = sockets;  // from here on served from fds, as inherited sockets are
  }
  const bool from_fds = options_.inherited.has_value();
  const std::string where = from_fds && !shared
                                ? "inherited DNS sockets (fds " +
                                      std::to_string(options_.inherited->udp_fd) + ", " +
                                      std::to_string(options_.inherited->tcp_fd) + ")"
                                : "DNS server on " + options_.listen_address.ToString();
  if (from_fds && (options_.inherited->udp_fd < 0 || options_.inherited->tcp_fd < 0)) {
    if (options_.inherited->udp_fd >= 0) close(options_.inherited->udp_fd);
    if (options_.inherited->tcp_fd >= 0) close(options_.inherited->tcp_fd);
    *error = where + ": need both a UDP and a TCP fd";
    return false;
  }
  if (!from_fds && !options_.listen_address.is_v4() && !options_.listen_address.is_v6()) {
    *error = "DNS server: the listen address is not IPv4 or IPv6";
    return false;
  }

  LoopServer::Options base;
  if (!from_fds) {
    std::optional<loop::SocketAddress> claimed = ClaimAddress(options_.listen_address, error);
    if (!claimed) {
      *error = where + ": " + *error;
      return false;
    }
    base.address = *claimed;
  }
  base.reuse_port = from_fds ? loop::ReusePort::kNo : loop::ReusePort::kYes;
  base.udp = options_.udp;
  base.clients = options_.clients;
  base.responses = options_.responses;
  base.tcp = options_.tcp;
  // One set of TCP caps and one output budget for all threads (and for every DnsServer of
  // the program, when it set them).
  if (base.tcp.caps == nullptr) base.tcp.caps = MakeTcpCaps(base.tcp);
  if (base.tcp.output_budget == nullptr) base.tcp.output_budget = MakeOutputBudget(base.tcp);
  base.admission = options_.admission;
  base.client_address = options_.client_address;

  if (from_fds && count > 1 && base.udp.receiver_thread) {
    base.udp.receiver_group = std::make_shared<loop::UdpReceiverGroup>();
  }
  // Sockets bound here die with us (their receivers may sleep in recvmmsg); inherited ones
  // outlive us (see loop::Inherited). Either way, several threads serve dups of them.
  base.fd_sharing.inherited = shared ? loop::Inherited::kNo : loop::Inherited::kYes;
  base.fd_sharing.between_threads =
      count > 1 ? loop::SharedBetweenThreads::kYes : loop::SharedBetweenThreads::kNo;
  for (size_t i = 0; i < count; ++i) {
    threads_.push_back(std::make_unique<Thread>());
    threads_.back()->index = i;
  }

  std::string failed;
  for (size_t i = 0; i < count && failed.empty(); ++i) {
    LoopServer::Options options = base;
    options.thread_index = i;
    StartResult result;
    if (from_fds) {
      options.udp_fd = fcntl(options_.inherited->udp_fd, F_DUPFD_CLOEXEC, 0);
      options.tcp_fd = fcntl(options_.inherited->tcp_fd, F_DUPFD_CLOEXEC, 0);
      if (options.udp_fd < 0 || options.tcp_fd < 0) {
        result.error = loop::internal::ErrnoMessage("dup", errno);
        if (options.udp_fd >= 0) close(options.udp_fd);
        if (options.tcp_fd >= 0) close(options.tcp_fd);
      } else {
        result = StartThread(*threads_[i], options);
      }
    } else {
      result = StartThread(*threads_[i], options);
    }
    if (!result.error.empty()) {
      failed = where + ", thread " + std::to_string(i + 1) + " of " + std::to_string(count) + ": " +
               result.error;
    }
  }
  if (from_fds) {
    close(options_.inherited->udp_fd);
    close(options_.inherited->tcp_fd);
  }
  if (!failed.empty()) {
    Stop();
    threads_.clear();
    *error = failed;
    return false;
  }
  udp_address_ = threads_[0]->udp_address;
  tcp_address_ = threads_[0]->tcp_address;
  LOG(INFO) << "serving DNS on udp " << udp_address_.ToString() << " and tcp "
            << tcp_address_.ToString() << " with " << count << " thread(s)"
            << (shared     ? " (shared sockets)"
                : from_fds ? " (inherited sockets)"
                           : "");
  return true;
}

DnsServer::StartResult DnsServer::StartThread(Thread& thread, const LoopServer::Options& options) {
  std::promise<StartResult> started;
  std::future<StartResult> future = started.get_future();
  thread.thread =
      std::thread([this, &thread, options, &started] { Run(&thread, options, &started); });
  StartResult result = future.get();
  if (!result.error.empty()) thread.thread.join();  // it ends by itself after failing
  return result;
}

void DnsServer::Run(Thread* thread, const LoopServer::Options& options,
                    std::promise<StartResult>* started) {
  SetThreadName("dns");
  serving_server = this;
  loop::Loop loop;
  {
    loop::TaskQueue queue(loop);
    StartResult result;
    std::unique_ptr<LoopServer> server =
        LoopServer::Create(loop, options, factory_, thread->stats, &result.error);
    const bool serving = server != nullptr;
    if (serving) {
      thread->loop = &loop;
      thread->poster = queue.poster();
      thread->udp_address = server->udp_address();
      thread->tcp_address = server->tcp_address();
    }
    started->set_value(std::move(result));  // `started` belongs to StartThread: not touched again
    if (serving) loop.Run();
    server.reset();
  }
  thread->closed_cleanly = loop.Close();
  if (!thread->closed_cleanly) {
    std::string names;
    for (const auto& name : loop.OpenHandleNames()) names += name + "; ";
    LOG(ERROR) << "DNS server thread " << thread->index
               << ": libuv handles left open at exit (a leak): " << names;
  }
  serving_server = nullptr;
}

void DnsServer::RequestStop() {
  for (const auto& thread : threads_) {
    loop::Loop* loop = thread->loop;
    // Fails only if the thread already ended.
    thread->poster.Post([loop] { loop->Stop(); });
  }
}

void DnsServer::Stop() {
  if (serving_server == this) {
    LOG(DFATAL) << "DnsServer::Stop called from a serving thread; use RequestStop";
    RequestStop();
    return;
  }
  std::lock_guard<std::mutex> lock(stop_mu_);
  RequestStop();
  JoinAll();
}

void DnsServer::JoinAll() {
  for (const auto& thread : threads_) {
    if (thread->thread.joinable()) thread->thread.join();
  }
}

bool DnsServer::Post(size_t thread_index, loop::TaskQueue::Task task) const {
  if (thread_index >= threads_.size()) return false;
  return threads_[thread_index]->poster.Post(std::move(task));
}

ServerStats DnsServer::stats() const {
  ServerStats total;
  for (const auto& thread : threads_) total += thread->stats.Read();
  return total;
}

ServerStats DnsServer::thread_stats(size_t thread_index) const {
  if (thread_index >= threads_.size()) return {};
  return threads_[thread_index]->stats.Read();
}

bool DnsServer::closed_cleanly() const {
  return std::all_of(threads_.begin(), threads_.end(), [](const auto& thread) {
    return !thread->thread.joinable() && thread->closed_cleanly;
  });
}

}  // namespace kdns::server

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

// Options::shared_sockets: one UDP and one TCP socket on `address` (the same port when 0),
// both plain (no SO_REUSEPORT), kept open for the threads to dup. False with *error.
bool BindShared(const loop::SocketAddress& address, int* udp_fd, int* tcp_fd, std::string* error) {
  for (int attempt = 0; attempt < loop::kPortZeroAttempts; ++attempt) {
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
  // A pair per thread sets the thread count: every socket of a SO_REUSEPORT group gets
  // its share of the traffic, so none may go unserved.
  const bool pair_per_thread = options_.inherited.size() > 1;
  size_t count = options_.threads;
  if (pair_per_thread) {
    if (count != 0 && count != options_.inherited.size()) {
      LOG(INFO) << "DNS: " << options_.inherited.size() << " inherited socket pairs, one per "
                << "thread: serving with " << options_.inherited.size() << " threads, not "
                << count;
    }
    count = options_.inherited.size();
  } else if (count == 0) {
    const DefaultThreadCount chosen = DefaultThreads();
    count = chosen.threads;
    LOG(INFO) << "DNS on " << options_.listen_address.ToString() << ": "
              << DescribeDefaultThreads(chosen, "DnsServer::Options::threads");
  }
  // Past kMaxThreadsOnSharedSocket, a SO_REUSEPORT pair per thread, as without sharing.
  const bool shared =
      options_.shared_sockets && options_.inherited.empty() && count <= kMaxThreadsOnSharedSocket;
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
    options_.inherited = {sockets};  // from here on served from fds, as inherited sockets are
  }
  const bool from_fds = !options_.inherited.empty();
  std::string where = "DNS server on " + options_.listen_address.ToString();
  if (from_fds && !shared) {
    where = "inherited DNS sockets (fds";
    for (const InheritedSockets& pair : options_.inherited) {
      where += " " + std::to_string(pair.udp_fd) + ", " + std::to_string(pair.tcp_fd) +
               (&pair == &options_.inherited.back() ? ")" : ";");
    }
  }
  auto close_inherited = [this] {
    for (const InheritedSockets& pair : options_.inherited) {
      if (pair.udp_fd >= 0) close(pair.udp_fd);
      if (pair.tcp_fd >= 0) close(pair.tcp_fd);
    }
  };
  if (std::any_of(
          options_.inherited.begin(), options_.inherited.end(),
          [](const InheritedSockets& pair) { return pair.udp_fd < 0 || pair.tcp_fd < 0; })) {
    close_inherited();
    *error = where + ": need both a UDP and a TCP fd";
    return false;
  }
  if (!from_fds && !options_.listen_address.is_v4() && !options_.listen_address.is_v6()) {
    *error = "DNS server: the listen address is not IPv4 or IPv6";
    return false;
  }

  LoopServer::Options base;
  if (!from_fds) {
    std::optional<loop::SocketAddress> claimed = loop::ClaimAddress(options_.listen_address, error);
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

  // Threads that serve dups of one pair: their receivers take turns on the one socket.
  const bool one_pair_for_all = from_fds && !pair_per_thread && count > 1;
  if (one_pair_for_all && base.udp.receiver_thread) {
    base.udp.receiver_group = std::make_shared<loop::UdpReceiverGroup>();
  }
  // Sockets bound here die with us (their receivers may sleep in recvmmsg); inherited ones
  // outlive us (see loop::Inherited).
  base.fd_sharing.inherited = shared ? loop::Inherited::kNo : loop::Inherited::kYes;
  base.fd_sharing.between_threads =
      one_pair_for_all ? loop::SharedBetweenThreads::kYes : loop::SharedBetweenThreads::kNo;
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
      const InheritedSockets& pair = options_.inherited[pair_per_thread ? i : 0];
      options.udp_fd = fcntl(pair.udp_fd, F_DUPFD_CLOEXEC, 0);
      options.tcp_fd = fcntl(pair.tcp_fd, F_DUPFD_CLOEXEC, 0);
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
  close_inherited();
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
            << (shared            ? " (shared sockets)"
                : pair_per_thread ? " (inherited sockets, a pair per thread)"
                : from_fds        ? " (inherited sockets)"
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

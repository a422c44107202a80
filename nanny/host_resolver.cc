#include "nanny/host_resolver.h"

#include <glog/logging.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <mutex>
#include <utility>

namespace kdns::nanny {
namespace {

bool InitLibrary(std::string* error) {
  static std::once_flag once;
  static int status = ARES_SUCCESS;
  std::call_once(once, [] { status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (status != ARES_SUCCESS) {
    *error = std::string("c-ares: ") + ares_strerror(status);
    return false;
  }
  return true;
}

std::optional<IpAddress> PickAddress(const ares_addrinfo* result) {
  std::optional<IpAddress> v6;
  for (const ares_addrinfo_node* node = result ? result->nodes : nullptr; node != nullptr;
       node = node->ai_next) {
    auto address = loop::SocketAddress::FromSockaddr(node->ai_addr, node->ai_addrlen);
    if (!address) continue;
    auto ip = IpAddress::Parse(address->HostString());
    if (!ip) continue;
    if (ip->is_v4()) return ip;
    if (!v6) v6 = ip;
  }
  return v6;
}

}  // namespace

HostResolver::HostResolver(loop::Loop& loop) : loop_(loop), timer_(loop) {}

std::unique_ptr<HostResolver> HostResolver::Create(loop::Loop& loop, const Options& options,
                                                   std::string* error) {
  if (!InitLibrary(error)) return nullptr;
  std::unique_ptr<HostResolver> resolver(new HostResolver(loop));
  ares_options opts{};
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
  opts.sock_state_cb = &HostResolver::OnSocketState;
  opts.sock_state_cb_data = resolver.get();
  opts.timeout = static_cast<int>(options.timeout_ms);
  opts.tries = options.tries;
  char lookups[] = "b";
  if (options.server) {
    // kubedns only: no search list, no hosts file.
    mask |= ARES_OPT_FLAGS | ARES_OPT_LOOKUPS;
    opts.flags = ARES_FLAG_NOSEARCH;
    opts.lookups = lookups;
  }
  int status = ares_init_options(&resolver->channel_, &opts, mask);
  if (status != ARES_SUCCESS) {
    *error = std::string("c-ares init: ") + ares_strerror(status);
    resolver->channel_ = nullptr;
    return nullptr;
  }
  if (options.server) {
    const auto& server = *options.server;
    std::string csv = server.is_v6() ? "[" + server.HostString() + "]" : server.HostString();
    csv += ":" + std::to_string(server.port());
    status = ares_set_servers_ports_csv(resolver->channel_, csv.c_str());
    if (status != ARES_SUCCESS) {
      *error = "c-ares server " + csv + ": " + ares_strerror(status);
      return nullptr;
    }
  }
  return resolver;
}

HostResolver::~HostResolver() {
  destroying_ = true;
  timer_.Stop();
  if (channel_ != nullptr) ares_destroy(channel_);  // callbacks see ARES_EDESTRUCTION
  for (auto& [fd, poll] : polls_) loop::internal::CloseHandle(poll->handle);
}

void HostResolver::Resolve(const std::string& name, Callback callback) {
  auto* request = new Request{this, name, std::move(callback)};
  ++pending_;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = ARES_AI_NOSORT;
  ares_getaddrinfo(channel_, name.c_str(), nullptr, &hints, &HostResolver::OnAddrInfo, request);
  ArmTimer();
}

void HostResolver::OnAddrInfo(void* arg, int status, int timeouts, ares_addrinfo* result) noexcept {
  std::unique_ptr<Request> request(static_cast<Request*>(arg));
  HostResolver* self = request->owner;
  std::optional<IpAddress> address;
  std::string error;
  if (status == ARES_SUCCESS) {
    address = PickAddress(result);
    if (!address) error = request->name + ": no IPv4 or IPv6 address";
  } else {
    error = request->name + ": " + ares_strerror(status);
  }
  if (result != nullptr) ares_freeaddrinfo(result);
  --self->pending_;
  if (self->destroying_ || status == ARES_EDESTRUCTION) return;
  loop::internal::CallUser("HostResolver", [&] { request->callback(address, error); });
}

void HostResolver::OnSocketState(void* data, ares_socket_t fd, int readable,
                                 int writable) noexcept {
  auto* self = static_cast<HostResolver*>(data);
  auto it = self->polls_.find(fd);
  if (!readable && !writable) {
    if (it != self->polls_.end()) {
      loop::internal::CloseHandle(it->second->handle);
      self->polls_.erase(it);
    }
    return;
  }
  if (self->destroying_) return;
  if (it == self->polls_.end()) {
    auto poll = std::make_unique<Poll>();
    poll->owner = self;
    poll->fd = fd;
    poll->handle = loop::internal::NewHandle<uv_poll_t>(poll.get());
    if (uv_poll_init_socket(self->loop_.get(), poll->handle, fd) != 0) {
      delete poll->handle;
      LOG(ERROR) << "c-ares: cannot watch socket " << fd;
      return;
    }
    it = self->polls_.emplace(fd, std::move(poll)).first;
  }
  int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);
  uv_poll_start(it->second->handle, events, &HostResolver::OnPoll);
}

void HostResolver::OnPoll(uv_poll_t* handle, int status, int events) noexcept {
  auto* poll = static_cast<Poll*>(handle->data);
  if (poll == nullptr) return;
  HostResolver* self = poll->owner;
  const ares_socket_t fd = poll->fd;
  // An error on the socket: let c-ares read it and notice.
  const bool readable = status < 0 || (events & UV_READABLE) != 0;
  const bool writable = status == 0 && (events & UV_WRITABLE) != 0;
  self->Process(readable ? fd : ARES_SOCKET_BAD, writable ? fd : ARES_SOCKET_BAD);
}

void HostResolver::Process(ares_socket_t read_fd, ares_socket_t write_fd) {
  ares_process_fd(channel_, read_fd, write_fd);
  ArmTimer();
}

void HostResolver::ArmTimer() {
  if (destroying_) return;
  if (pending_ == 0) {
    timer_.Stop();
    return;
  }
  // c-ares's timeouts are seconds long; a fixed tick while lookups are pending keeps the
  // timer's callback constant (it is never replaced from inside itself).
  if (!timer_.IsActive()) {
    timer_.StartRepeating(kTickMs, [this] { Process(ARES_SOCKET_BAD, ARES_SOCKET_BAD); });
  }
}

}  // namespace kdns::nanny

#include "common/ares/channel.h"

#include <glog/logging.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/loop/handle.h"

namespace kdns::ares {
namespace {

bool InitLibrary(std::string* error) {
  static std::once_flag once;
  static int status = ARES_SUCCESS;
  std::call_once(once, [] { status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (status != ARES_SUCCESS) {
    *error = "c-ares: library init: " + Channel::StatusText(status);
    return false;
  }
  return true;
}

ares_addr_port_node ServerNode(const loop::SocketAddress& address) {
  ares_addr_port_node node{};
  const sockaddr* sa = address.sockaddr_ptr();
  if (address.is_v4()) {
    node.family = AF_INET;
    std::memcpy(&node.addr.addr4, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr,
                sizeof(in_addr));
  } else {
    node.family = AF_INET6;
    std::memcpy(&node.addr.addr6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
                sizeof(in6_addr));
  }
  node.udp_port = address.port();
  node.tcp_port = address.port();
  return node;
}

}  // namespace

struct Channel::PendingReply {
  Channel* channel;
  ReplyCallback callback;
  uint64_t start_ns;
};

struct Channel::PendingLookup {
  Channel* channel;
  std::string name;
  AddressCallback callback;
};

Channel::Channel(loop::Loop& loop, const Options& options)
    : loop_(loop),
      options_(options),
      timer_(loop, [this] { Process(ARES_SOCKET_BAD, ARES_SOCKET_BAD); }) {}

std::unique_ptr<Channel> Channel::Create(loop::Loop& loop, const Options& options,
                                         std::string* error) {
  if (!InitLibrary(error)) return nullptr;
  for (const auto& server : options.servers) {
    if (!server.is_v4() && !server.is_v6()) {
      *error = "c-ares: no server address";
      return nullptr;
    }
  }
  std::unique_ptr<Channel> self(new Channel(loop, options));

  ares_options ares{};
  ares.timeout = static_cast<int>(std::min<uint64_t>(options.timeout_ms, INT_MAX));
  ares.tries = options.tries;
  ares.sock_state_cb = &Channel::OnSocketState;
  ares.sock_state_cb_data = self.get();
  int mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB;
  static char kNoResolvConf[] = "/dev/null";
  static char kDnsOnly[] = "b";
  if (!options.servers.empty()) {
    // The servers are ours to set: nothing from the host's resolv.conf applies, no search
    // list, no hosts file; every rcode comes back to Send's caller.
    ares.flags = ARES_FLAG_NOCHECKRESP | ARES_FLAG_NOSEARCH;
    ares.resolvconf_path = kNoResolvConf;
    ares.lookups = kDnsOnly;
    mask |= ARES_OPT_FLAGS | ARES_OPT_RESOLVCONF | ARES_OPT_LOOKUPS;
  }
  int status = ares_init_options(&self->channel_, &ares, mask);
  if (status != ARES_SUCCESS) {
    self->channel_ = nullptr;
    *error = "c-ares: init: " + StatusText(status);
    return nullptr;
  }
  if (!options.servers.empty()) {
    std::vector<ares_addr_port_node> nodes;
    nodes.reserve(options.servers.size());
    for (const auto& server : options.servers) nodes.push_back(ServerNode(server));
    for (size_t i = 0; i + 1 < nodes.size(); ++i) nodes[i].next = &nodes[i + 1];
    status = ares_set_servers_ports(self->channel_, nodes.data());
    if (status != ARES_SUCCESS) {
      *error = "c-ares: server " + options.servers.front().ToString() + ": " + StatusText(status);
      return nullptr;
    }
  }
  return self;
}

Channel::~Channel() {
  CHECK_EQ(processing_, 0) << "a c-ares Channel was destroyed from inside one of its callbacks";
  destroying_ = true;
  // Ends every query (callbacks with ARES_EDESTRUCTION free them without calling back) and
  // closes every socket (OnSocketState(fd, 0, 0) destroys its FdWatch first).
  if (channel_ != nullptr) ares_destroy(channel_);
  watches_.clear();
}

void Channel::Send(std::span<const uint8_t> query, ReplyCallback callback) {
  auto* pending = new PendingReply{this, std::move(callback), uv_hrtime()};
  ++in_flight_;
  ++processing_;
  ares_send(channel_, query.data(), static_cast<int>(query.size()), &Channel::OnAnswer, pending);
  --processing_;
  ArmTimer();
}

void Channel::LookupAddresses(const std::string& name, AddressCallback callback) {
  auto* pending = new PendingLookup{this, name, std::move(callback)};
  ++in_flight_;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = ARES_AI_NOSORT;
  ++processing_;
  ares_getaddrinfo(channel_, name.c_str(), nullptr, &hints, &Channel::OnAddrInfo, pending);
  --processing_;
  ArmTimer();
}

void Channel::OnAnswer(void* arg, int status, int /*timeouts*/, unsigned char* abuf,
                       int alen) noexcept {
  std::unique_ptr<PendingReply> pending(static_cast<PendingReply*>(arg));
  Channel* self = pending->channel;
  --self->in_flight_;
  if (status == ARES_EDESTRUCTION || self->destroying_) return;
  Reply reply;
  reply.status = status;
  reply.latency_ns = uv_hrtime() - pending->start_ns;
  if (status == ARES_SUCCESS && abuf != nullptr && alen > 0) {
    reply.bytes.assign(abuf, abuf + alen);
  }
  loop::internal::CallUser("c-ares reply", [&] { pending->callback(std::move(reply)); });
}

void Channel::OnAddrInfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) noexcept {
  std::unique_ptr<PendingLookup> pending(static_cast<PendingLookup*>(arg));
  Channel* self = pending->channel;
  std::vector<IpAddress> addresses;
  std::string error;
  if (status == ARES_SUCCESS) {
    for (const ares_addrinfo_node* node = result ? result->nodes : nullptr; node != nullptr;
         node = node->ai_next) {
      auto address = loop::SocketAddress::FromSockaddr(node->ai_addr, node->ai_addrlen);
      if (!address) continue;
      // A zoned (link-local) address cannot be named by an IpAddress: skipped.
      if (address->scope_id() == 0) addresses.push_back(loop::IpOf(*address));
    }
    if (addresses.empty()) error = pending->name + ": no IPv4 or IPv6 address";
  } else {
    error = pending->name + ": " + ares_strerror(status);
  }
  if (result != nullptr) ares_freeaddrinfo(result);
  --self->in_flight_;
  if (status == ARES_EDESTRUCTION || self->destroying_) return;
  loop::internal::CallUser("c-ares lookup", [&] { pending->callback(addresses, error); });
}

void Channel::OnSocketState(void* data, ares_socket_t fd, int readable, int writable) noexcept {
  auto* self = static_cast<Channel*>(data);
  auto it = self->watches_.find(fd);
  if (!readable && !writable) {
    // c-ares is about to close the socket: stop watching it while the fd is still open.
    if (it != self->watches_.end()) self->watches_.erase(it);
    return;
  }
  if (self->destroying_) return;
  if (it == self->watches_.end()) {
    std::string error;
    auto watch = loop::FdWatch::Open(
        self->loop_, fd,
        [self, fd](int ready, int status) {
          // On an error, let c-ares find it on the socket itself.
          const bool read = status < 0 || (ready & loop::FdWatch::kReadable) != 0;
          const bool write = status == 0 && (ready & loop::FdWatch::kWritable) != 0;
          self->Process(read ? fd : ARES_SOCKET_BAD, write ? fd : ARES_SOCKET_BAD);
        },
        &error);
    if (watch == nullptr) {
      // The query on this socket ends with c-ares's timeout.
      LOG_EVERY_N(ERROR, 100) << "c-ares socket: " << error;
      return;
    }
    it = self->watches_.emplace(fd, std::move(watch)).first;
  }
  const int events =
      (readable ? loop::FdWatch::kReadable : 0) | (writable ? loop::FdWatch::kWritable : 0);
  if (const int rc = it->second->SetInterest(events); rc != 0) {
    LOG_EVERY_N(ERROR, 100) << "c-ares socket " << fd << ": " << uv_strerror(rc);
  }
}

void Channel::Process(ares_socket_t read_fd, ares_socket_t write_fd) {
  ++processing_;
  ares_process_fd(channel_, read_fd, write_fd);
  --processing_;
  ArmTimer();
}

void Channel::ArmTimer() {
  timeval next{};
  if (destroying_ || in_flight_ == 0 || ares_timeout(channel_, nullptr, &next) == nullptr) {
    timer_.Stop();
    return;
  }
  // Rounded up: firing early would only make c-ares find nothing to do and re-arm.
  const uint64_t ms = static_cast<uint64_t>(next.tv_sec) * 1000 +
                      (static_cast<uint64_t>(next.tv_usec) + 999) / 1000;
  timer_.Start(ms);
}

std::string Channel::StatusText(int status) {
  switch (status) {
    case ARES_ECONNREFUSED:
      return "connection refused";
    case ARES_ETIMEOUT:
      return "timeout";
    case ARES_EBADRESP:
      return "malformed reply";
    case ARES_EBADQUERY:
      return "malformed query";
    case ARES_ENOMEM:
      return "out of memory";
    case ARES_ECANCELLED:
      return "cancelled";
    default:
      break;
  }
  std::string text = ares_strerror(status);
  if (!text.empty()) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

}  // namespace kdns::ares

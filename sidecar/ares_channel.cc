#include "sidecar/ares_channel.h"

#include <glog/logging.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/loop/handle.h"

namespace kdns::sidecar {

struct AresChannel::Pending {
  AresChannel* channel;
  Callback callback;
  uint64_t start_ns;
};

AresChannel::AresChannel(loop::Loop& loop, const Options& options)
    : loop_(loop), options_(options), timer_(loop) {}

std::unique_ptr<AresChannel> AresChannel::Create(loop::Loop& loop, const Options& options,
                                                 std::string* error) {
  static std::once_flag init_once;
  static int init_status = ARES_SUCCESS;
  std::call_once(init_once, [] { init_status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (init_status != ARES_SUCCESS) {
    *error = "c-ares: library init: " + StatusText(init_status);
    return nullptr;
  }
  if (!options.server.is_v4() && !options.server.is_v6()) {
    *error = "c-ares: no server address";
    return nullptr;
  }
  std::unique_ptr<AresChannel> self(new AresChannel(loop, options));

  ares_options ares{};
  ares.flags = ARES_FLAG_NOCHECKRESP;  // every rcode comes back to the caller
  ares.timeout = static_cast<int>(std::min<uint64_t>(options.timeout_ms, INT_MAX));
  ares.tries = options.tries;
  ares.sock_state_cb = &AresChannel::OnSocketState;
  ares.sock_state_cb_data = self.get();
  // The server is ours to set; nothing from the host's resolv.conf applies.
  static char kNoResolvConf[] = "/dev/null";
  ares.resolvconf_path = kNoResolvConf;
  const int mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB |
                   ARES_OPT_RESOLVCONF;
  int status = ares_init_options(&self->channel_, &ares, mask);
  if (status != ARES_SUCCESS) {
    self->channel_ = nullptr;
    *error = "c-ares: init: " + StatusText(status);
    return nullptr;
  }

  ares_addr_port_node server{};
  const sockaddr* sa = options.server.sockaddr_ptr();
  if (options.server.is_v4()) {
    server.family = AF_INET;
    std::memcpy(&server.addr.addr4, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr,
                sizeof(in_addr));
  } else {
    server.family = AF_INET6;
    std::memcpy(&server.addr.addr6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
                sizeof(in6_addr));
  }
  server.udp_port = options.server.port();
  server.tcp_port = options.server.port();
  status = ares_set_servers_ports(self->channel_, &server);
  if (status != ARES_SUCCESS) {
    *error = "c-ares: server " + options.server.ToString() + ": " + StatusText(status);
    return nullptr;
  }
  return self;
}

AresChannel::~AresChannel() {
  CHECK_EQ(processing_, 0) << "an AresChannel was destroyed from inside one of its callbacks";
  destroying_ = true;
  // Ends every query (OnAnswer with ARES_EDESTRUCTION frees them without calling back) and
  // closes every socket (OnSocketState(fd, 0, 0) closes its poll handle first).
  if (channel_ != nullptr) ares_destroy(channel_);
  for (auto& [fd, poll] : polls_) loop::internal::CloseHandle(poll);
  polls_.clear();
}

void AresChannel::Send(std::span<const uint8_t> query, Callback callback) {
  auto* pending = new Pending{this, std::move(callback), uv_hrtime()};
  ++in_flight_;
  ++processing_;
  ares_send(channel_, query.data(), static_cast<int>(query.size()), &AresChannel::OnAnswer,
            pending);
  --processing_;
  ArmTimer();
}

void AresChannel::OnAnswer(void* arg, int status, int /*timeouts*/, unsigned char* abuf,
                           int alen) noexcept {
  std::unique_ptr<Pending> pending(static_cast<Pending*>(arg));
  AresChannel* self = pending->channel;
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

void AresChannel::OnSocketState(void* data, ares_socket_t fd, int readable, int writable) noexcept {
  auto* self = static_cast<AresChannel*>(data);
  auto it = self->polls_.find(fd);
  if (!readable && !writable) {
    // c-ares is about to close the socket: stop watching it while the fd is still open.
    if (it != self->polls_.end()) {
      uv_poll_stop(it->second);
      loop::internal::CloseHandle(it->second);
      self->polls_.erase(it);
    }
    return;
  }
  if (self->destroying_) return;
  if (it == self->polls_.end()) {
    auto* poll = loop::internal::NewHandle<uv_poll_t>(self);
    const int rc = uv_poll_init_socket(self->loop_.get(), poll, fd);
    if (rc != 0) {
      // The query on this socket ends with c-ares's timeout.
      LOG_EVERY_N(ERROR, 100) << "c-ares socket " << fd << ": uv_poll_init: " << uv_strerror(rc);
      delete poll;
      return;
    }
    it = self->polls_.emplace(fd, poll).first;
  }
  const int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);
  const int rc = uv_poll_start(it->second, events, &AresChannel::OnPoll);
  if (rc != 0) {
    LOG_EVERY_N(ERROR, 100) << "c-ares socket " << fd << ": " << uv_strerror(rc);
  }
}

void AresChannel::OnPoll(uv_poll_t* handle, int status, int events) noexcept {
  auto* self = static_cast<AresChannel*>(handle->data);
  if (self == nullptr) return;
  uv_os_fd_t fd = -1;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(handle), &fd) != 0) return;
  ares_socket_t read_fd = ARES_SOCKET_BAD;
  ares_socket_t write_fd = ARES_SOCKET_BAD;
  if (status < 0) {
    // Let c-ares find the error on the socket itself.
    read_fd = write_fd = fd;
  } else {
    if (events & UV_READABLE) read_fd = fd;
    if (events & UV_WRITABLE) write_fd = fd;
  }
  self->Process(read_fd, write_fd);
}

void AresChannel::Process(ares_socket_t read_fd, ares_socket_t write_fd) {
  ++processing_;
  ares_process_fd(channel_, read_fd, write_fd);
  --processing_;
  ArmTimer();
}

void AresChannel::ArmTimer() {
  timeval next{};
  if (in_flight_ == 0 || ares_timeout(channel_, nullptr, &next) == nullptr) {
    timer_.Stop();
    return;
  }
  // Rounded up: firing early would only make c-ares find nothing to do and re-arm.
  const uint64_t ms = static_cast<uint64_t>(next.tv_sec) * 1000 +
                      (static_cast<uint64_t>(next.tv_usec) + 999) / 1000;
  timer_.Start(ms, [this] { Process(ARES_SOCKET_BAD, ARES_SOCKET_BAD); });
}

std::string AresChannel::StatusText(int status) {
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

}  // namespace kdns::sidecar

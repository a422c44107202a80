#include "common/loop/tcp_listener.h"

#include <glog/logging.h>
#include <unistd.h>

#include <utility>

namespace kdns::loop {

std::unique_ptr<TcpListener> TcpListener::Bind(Loop& loop, const SocketAddress& address,
                                               const Options& options, AcceptCallback callback,
                                               std::string* error) {
  int fd = internal::CreateBoundSocket(SOCK_STREAM, address, options.reuse_port, error);
  if (fd < 0) return nullptr;
  std::unique_ptr<TcpListener> listener(new TcpListener(loop, options, std::move(callback)));
  if (!listener->Listen(fd, error)) return nullptr;
  return listener;
}

std::unique_ptr<TcpListener> TcpListener::FromFd(Loop& loop, int fd, const Options& options,
                                                 AcceptCallback callback, std::string* error) {
  if (!internal::PrepareSocketFd(fd, SOCK_STREAM, error)) {
    close(fd);
    return nullptr;
  }
  std::unique_ptr<TcpListener> listener(new TcpListener(loop, options, std::move(callback)));
  if (!listener->Listen(fd, error)) return nullptr;
  return listener;
}

TcpListener::TcpListener(Loop& loop, const Options& options, AcceptCallback callback)
    : loop_(loop), options_(options), callback_(std::move(callback)) {}

bool TcpListener::Listen(int fd, std::string* error) {
  CHECK_EQ(handle_.Open(this, [&](uv_tcp_t* h) { return uv_tcp_init(loop_.get(), h); }), 0);
  int rc = uv_tcp_open(handle_.get(), fd);
  if (rc != 0) {
    close(fd);  // the handle did not take it
  } else {
    rc = uv_listen(handle_.stream(), options_.backlog, &TcpListener::OnConnection);
  }
  if (rc != 0) {
    *error = "listen: " + std::string(uv_strerror(rc));
    handle_.Reset();  // closes fd if the handle took it
    return false;
  }
  return true;
}

TcpListener::~TcpListener() = default;

int TcpListener::fd() const {
  uv_os_fd_t fd = -1;
  if (handle_) uv_fileno(handle_.base(), &fd);
  return fd;
}

SocketAddress TcpListener::GetLocalAddress() const { return internal::LocalAddressOf(fd()); }

void TcpListener::OnConnection(uv_stream_t* server, int status) noexcept {
  auto* self = static_cast<TcpListener*>(server->data);
  if (self == nullptr) return;
  if (status == UV_EINVAL) {
    // The socket no longer listens: whoever else holds it shut it down (the nanny takes a
    // node cache's listeners out of their SO_REUSEPORT group when the next node cache
    // takes over). libuv would call us again at once for ever; close our fd instead.
    // Connections accepted before stay open.
    LOG(INFO) << "TCP listener (fd " << self->fd() << ") was shut down by another holder of "
              << "the socket: no more connections are accepted on it";
    self->handle_.Reset();
    return;
  }
  if (status < 0) {
    ++self->stats_.errors;
    LOG_EVERY_N(WARNING, 1000) << "accept on " << self->GetLocalAddress().ToString() << ": "
                               << uv_strerror(status);
    return;
  }
  auto* client = new (std::nothrow) uv_tcp_t{};  // no exception may leave a libuv callback
  if (client == nullptr) {
    ++self->stats_.errors;
    return;
  }
  CHECK_EQ(uv_tcp_init(self->loop_.get(), client), 0);
  int rc = uv_accept(server, reinterpret_cast<uv_stream_t*>(client));
  if (rc != 0 || *self->open_connections_ >= self->options_.max_connections) {
    if (rc != 0) {
      ++self->stats_.errors;
    } else {
      ++self->stats_.rejected;
      LOG_EVERY_N(WARNING, 1000) << "TCP connection cap (" << self->options_.max_connections
                                 << ") reached on " << self->GetLocalAddress().ToString();
    }
    uv_close(reinterpret_cast<uv_handle_t*>(client),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    return;
  }
  ++self->stats_.accepted;
  ++*self->open_connections_;
  auto connection = std::make_unique<TcpConnection>(self->loop_, client, self->options_.connection,
                                                    self->open_connections_);
  internal::CallUser("TcpListener accept", [&] { self->callback_(std::move(connection)); });
}

}  // namespace kdns::loop

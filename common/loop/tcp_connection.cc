#include "common/loop/tcp_connection.h"

#include <glog/logging.h>

#include <array>
#include <cstring>
#include <utility>

#include "common/loop/read_buffer.h"

namespace kdns::loop {
namespace {

// Every read lands in the thread's read buffer and is consumed synchronously by on_data, so
// one buffer serves all connections of a loop instead of 64 KiB per connection.
constexpr size_t kReadBufferBytes = 64 * 1024;

}  // namespace

struct TcpConnection::WriteRequest {
  uv_write_t req;
  std::unique_ptr<uint8_t[]> data;
  size_t size;
  // Charged with `size` bytes; released when the write completes, also after the
  // connection is gone.
  std::shared_ptr<OutputBudget> budget;
};

const char* TcpConnection::CloseReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::kLocal:
      return "local";
    case CloseReason::kFlushed:
      return "flushed";
    case CloseReason::kPeerClosed:
      return "peer-closed";
    case CloseReason::kError:
      return "error";
    case CloseReason::kIdleTimeout:
      return "idle-timeout";
    case CloseReason::kOutputOverflow:
      return "output-overflow";
    case CloseReason::kProtocolError:
      return "protocol-error";
    case CloseReason::kFrameTimeout:
      return "frame-timeout";
    case CloseReason::kOutputTotal:
      return "output-total";
    case CloseReason::kEvicted:
      return "evicted";
    case CloseReason::kQueryTimeout:
      return "query-timeout";
  }
  return "unknown";
}

std::unique_ptr<TcpConnection> TcpConnection::Connect(Loop& loop, const SocketAddress& address,
                                                      const Options& options,
                                                      ConnectCallback on_connected,
                                                      std::string* error) {
  auto* handle = new uv_tcp_t{};  // owned by the connection from the next line on
  CHECK_EQ(uv_tcp_init(loop.get(), handle), 0);
  auto conn = std::make_unique<TcpConnection>(loop, handle, options, nullptr);
  conn->state_ = State::kConnecting;
  conn->peer_ = address;
  conn->on_connected_ = std::move(on_connected);
  auto* req = new uv_connect_t{};
  int rc = uv_tcp_connect(req, handle, address.sockaddr_ptr(), &TcpConnection::OnConnect);
  if (rc != 0) {
    delete req;
    *error = "connect to " + address.ToString() + ": " + uv_strerror(rc);
    return nullptr;  // the destructor closes the handle
  }
  return conn;
}

TcpConnection::TcpConnection(Loop& loop, uv_tcp_t* handle, const Options& options,
                             std::shared_ptr<size_t> slot)
    : options_(options), slot_(std::move(slot)), idle_timer_(loop) {
  handle_.Adopt(handle, this);
  sockaddr_storage storage{};
  int len = sizeof(storage);
  if (uv_tcp_getpeername(handle_.get(), reinterpret_cast<sockaddr*>(&storage), &len) == 0) {
    peer_ = SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), len)
                .value_or(SocketAddress());
  }
  if (options_.no_delay) uv_tcp_nodelay(handle_.get(), 1);
}

TcpConnection::~TcpConnection() {
  // Close() released the slot already; handle_ closes the socket (and cancels a pending
  // on_close) when it is destroyed.
  if (state_ != State::kClosing && slot_ != nullptr) --*slot_;
}

void TcpConnection::OnConnect(uv_connect_t* req, int status) noexcept {
  auto* self = static_cast<TcpConnection*>(req->handle->data);
  delete req;
  if (self == nullptr || status == UV_ECANCELED) return;
  ConnectCallback callback = std::move(self->on_connected_);
  if (status == 0) {
    self->state_ = State::kOpen;
    if (self->options_.no_delay) uv_tcp_nodelay(self->handle_.get(), 1);
  } else {
    self->Close(CloseReason::kError);
  }
  if (callback) internal::CallUser("TcpConnection connect", [&] { callback(status); });
}

void TcpConnection::Start(Callbacks callbacks) {
  callbacks_ = std::move(callbacks);
  if (state_ != State::kOpen) return;
  SetIdleTimeout(options_.idle_timeout_ms);
  ResumeReading();
}

void TcpConnection::PauseReading() {
  if (!reading_) return;
  reading_ = false;
  uv_read_stop(stream());
}

void TcpConnection::ResumeReading() {
  if (reading_ || state_ != State::kOpen) return;
  int rc = uv_read_start(stream(), &TcpConnection::OnAlloc, &TcpConnection::OnRead);
  if (rc != 0) {
    Close(CloseReason::kError);
    return;
  }
  reading_ = true;
}

void TcpConnection::OnAlloc(uv_handle_t*, size_t, uv_buf_t* buf) noexcept {
  *buf = ThreadReadBuffer(kReadBufferBytes);
}

void TcpConnection::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) noexcept {
  auto* self = static_cast<TcpConnection*>(stream->data);
  if (self == nullptr || nread == 0) return;
  if (nread > 0) {
    self->Activity();
    if (!self->callbacks_.on_data) return;
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(buf->base),
                                   static_cast<size_t>(nread));
    internal::CallUser("TcpConnection data", [&] { self->callbacks_.on_data(bytes); });
    return;
  }
  if (nread == UV_EOF && self->callbacks_.on_eof) {
    self->PauseReading();
    internal::CallUser("TcpConnection eof", [&] { self->callbacks_.on_eof(); });
    return;
  }
  self->Close(nread == UV_EOF ? CloseReason::kPeerClosed : CloseReason::kError);
}

bool TcpConnection::Write(std::initializer_list<std::span<const uint8_t>> pieces) {
  if (state_ != State::kOpen) return false;
  size_t total = 0;
  for (const auto& piece : pieces) total += piece.size();
  if (total == 0) return true;
  // Checked before anything is written, so a refused write never leaves half a message.
  if (pending_output_bytes_ + total > options_.max_pending_output_bytes) return false;

  size_t written = 0;
  if (pending_output_bytes_ == 0) {
    // Usually the kernel takes it all at once: no copy, no request.
    std::array<uv_buf_t, 4> bufs;
    size_t n = 0;
    for (const auto& piece : pieces) {
      if (n == bufs.size()) break;
      bufs[n++] =
          uv_buf_init(const_cast<char*>(reinterpret_cast<const char*>(piece.data())), piece.size());
    }
    if (n == pieces.size()) {
      int rc = uv_try_write(stream(), bufs.data(), n);
      if (rc >= 0) {
        written = static_cast<size_t>(rc);
      } else if (rc != UV_EAGAIN) {
        Close(CloseReason::kError);
        return false;
      }
      if (written == total) {
        Activity();
        return true;
      }
    }
  }

  auto request = std::make_unique<WriteRequest>();
  request->size = total - written;
  if (options_.output_budget != nullptr) {
    if (!options_.output_budget->TryCharge(request->size)) {
      Close(CloseReason::kOutputTotal);
      return false;
    }
    request->budget = options_.output_budget;
  }
  request->data = std::make_unique<uint8_t[]>(request->size);
  size_t skip = written;
  size_t offset = 0;
  for (const auto& piece : pieces) {
    size_t from = std::min(skip, piece.size());
    skip -= from;
    std::memcpy(request->data.get() + offset, piece.data() + from, piece.size() - from);
    offset += piece.size() - from;
  }
  uv_buf_t buf = uv_buf_init(reinterpret_cast<char*>(request->data.get()), request->size);
  int rc = uv_write(&request->req, stream(), &buf, 1, &TcpConnection::OnWrite);
  if (rc != 0) {
    if (request->budget != nullptr) request->budget->Release(request->size);
    Close(CloseReason::kError);
    return false;
  }
  pending_output_bytes_ += request->size;
  (void)request.release();  // owned by libuv until OnWrite
  return true;
}

void TcpConnection::OnWrite(uv_write_t* req, int status) noexcept {
  std::unique_ptr<WriteRequest> request(reinterpret_cast<WriteRequest*>(req));
  if (request->budget != nullptr) request->budget->Release(request->size);
  auto* self = static_cast<TcpConnection*>(req->handle->data);
  if (self == nullptr) return;
  self->pending_output_bytes_ -= request->size;
  if (status == UV_ECANCELED) return;
  if (status < 0) {
    self->Close(CloseReason::kError);
    return;
  }
  self->Activity();
  if (self->pending_output_bytes_ == 0 && self->state_ == State::kOpen &&
      self->callbacks_.on_drain) {
    internal::CallUser("TcpConnection drain", [self] { self->callbacks_.on_drain(); });
  }
}

void TcpConnection::CloseWhenFlushed() {
  if (state_ != State::kOpen) return;
  PauseReading();
  state_ = State::kShuttingDown;
  auto* req = new uv_shutdown_t{};
  if (uv_shutdown(req, stream(), &TcpConnection::OnShutdown) != 0) {
    delete req;
    Close(CloseReason::kFlushed);
  }
}

void TcpConnection::OnShutdown(uv_shutdown_t* req, int status) noexcept {
  auto* self = static_cast<TcpConnection*>(req->handle->data);
  delete req;
  if (self != nullptr) self->Close(status == 0 ? CloseReason::kFlushed : CloseReason::kError);
}

void TcpConnection::Close(CloseReason reason) {
  if (state_ == State::kClosing || !handle_) return;
  state_ = State::kClosing;
  close_reason_ = reason;
  reading_ = false;
  idle_timer_.Stop();
  if (slot_ != nullptr) {
    --*slot_;
    slot_.reset();
  }
  handle_.CloseThen<&TcpConnection::handle_, &TcpConnection::OnHandleClosed>();
}

void TcpConnection::OnHandleClosed() {
  if (!callbacks_.on_close) return;
  CloseReason reason = close_reason_;
  internal::CallUser("TcpConnection close", [&] { callbacks_.on_close(reason); });
}

void TcpConnection::SetIdleTimeout(uint64_t idle_timeout_ms) {
  options_.idle_timeout_ms = idle_timeout_ms;
  if (idle_timeout_ms == 0 || state_ == State::kClosing) {
    idle_timer_.Stop();
    return;
  }
  idle_timer_.Start(idle_timeout_ms, [this] { Close(CloseReason::kIdleTimeout); });
}

void TcpConnection::Activity() {
  if (options_.idle_timeout_ms > 0 && idle_timer_.IsActive()) idle_timer_.Restart();
}

SocketAddress TcpConnection::GetLocalAddress() const {
  if (!handle_) return {};
  sockaddr_storage storage{};
  int len = sizeof(storage);
  if (uv_tcp_getsockname(handle_.get(), reinterpret_cast<sockaddr*>(&storage), &len) != 0)
    return {};
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), len)
      .value_or(SocketAddress());
}

}  // namespace kdns::loop

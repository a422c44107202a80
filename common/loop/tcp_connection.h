// TcpConnection: one TCP byte stream on a libuv uv_tcp_t, accepted by a TcpListener or
// opened with Connect(). Generic: DnsTcpConnection and http::Server add framing on top.
//
// Output is bounded: Write() copies what the kernel does not take at once and refuses
// (returns false) once more than Options::max_pending_output_bytes would be waiting, so a
// peer that does not read costs bounded memory; the caller then closes. With
// Options::output_budget, what waits is also charged to that process-wide budget; a write
// whose rest does not fit closes the connection (kOutputTotal: part of it may be sent
// already, so the stream cannot go on). An idle timeout (no bytes read and no write
// completed for idle_timeout_ms) closes the connection; owners that need a stricter
// notion of idle (DnsTcpConnection: whole messages only) leave it 0 and keep their own.
//
// Closing: on_close runs exactly once, from a libuv callback (never from inside a call you
// made), after the socket is closed for any reason, including Close(). It is the place to
// destroy the connection. Destroying the TcpConnection at any other time is also fine; no
// callback follows then. Half-close: if on_eof is set, the peer's FIN calls it and the
// connection stays open for writing (a DNS client may half-close after its last query and
// still expects the answers); otherwise the FIN closes the connection (kPeerClosed).
//
// Thread: the loop's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "common/loop/handle.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/tcp_limits.h"
#include "common/loop/timer.h"

namespace kdns::loop {

class TcpConnection {
 public:
  enum class CloseReason {
    kLocal,           // Close() was called
    kFlushed,         // CloseWhenFlushed() finished
    kPeerClosed,      // FIN from the peer with no on_eof callback
    kError,           // read/write/connect error (reset by peer, ...)
    kIdleTimeout,     // nothing happened for idle_timeout_ms
    kOutputOverflow,  // closed by the owner because the peer does not read
    kProtocolError,   // closed by the owner because the peer sent garbage
    kFrameTimeout,    // closed by the owner: a started message did not complete in time
    kOutputTotal,     // the process-wide output budget (Options::output_budget) is spent
    kEvicted,         // closed by the owner to make room for a new connection at a cap
    kQueryTimeout,    // closed by the owner: its queries got no answer in time, nor could
                      // they be answered then
  };
  static const char* CloseReasonName(CloseReason reason);

  struct Options {
    uint64_t idle_timeout_ms = 0;  // 0: no idle timeout
    size_t max_pending_output_bytes = 1 << 20;
    bool no_delay = true;  // TCP_NODELAY: request/response protocols want no Nagle delay
    // Shared by the connections of a process: bounds their queued output in total.
    std::shared_ptr<OutputBudget> output_budget;
  };

  struct Callbacks {
    // Bytes read; valid only during the call.
    std::function<void(std::span<const uint8_t> bytes)> on_data;
    // The peer half-closed. Optional; see the header comment.
    std::function<void()> on_eof;
    // Optional: all queued output reached the kernel (pending_output_bytes() fell to 0).
    // Not called for writes that completed inside Write().
    std::function<void()> on_drain;
    std::function<void(CloseReason reason)> on_close;
  };

  // Connection attempt result: 0 or a negative libuv error code (uv_strerror names it).
  using ConnectCallback = std::function<void(int status)>;

  // Starts connecting to `address`. The connection is usable (Start, Write) once
  // on_connected(0) ran; destroying it earlier cancels the attempt. nullptr with *error if
  // the attempt cannot even start.
  [[nodiscard]] static std::unique_ptr<TcpConnection> Connect(Loop& loop,
                                                              const SocketAddress& address,
                                                              const Options& options,
                                                              ConnectCallback on_connected,
                                                              std::string* error);

  // Used by TcpListener: takes ownership of a freshly initialised uv_tcp_t allocated with
  // `new` (data unset). `slot` is released when the connection closes (the listener's
  // connection cap).
  TcpConnection(Loop& loop, uv_tcp_t* handle, const Options& options, std::shared_ptr<size_t> slot);
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  // Installs the callbacks and starts reading and the idle timer.
  void Start(Callbacks callbacks);
  void PauseReading();
  void ResumeReading();

  // Queues the pieces as one contiguous write. False (nothing written) if the connection
  // is closing or the output bound would be exceeded.
  [[nodiscard]] bool Write(std::initializer_list<std::span<const uint8_t>> pieces);
  [[nodiscard]] bool Write(std::span<const uint8_t> bytes) { return Write({bytes}); }

  // Closes now; pending output is discarded. on_close(reason) follows.
  void Close(CloseReason reason = CloseReason::kLocal);
  // Stops reading, sends pending output and a FIN, then closes (on_close(kFlushed)).
  void CloseWhenFlushed();

  // 0 disables; otherwise (re)starts the idle timer.
  void SetIdleTimeout(uint64_t idle_timeout_ms);

  bool is_open() const { return state_ == State::kOpen; }
  size_t pending_output_bytes() const { return pending_output_bytes_; }
  const SocketAddress& peer_address() const { return peer_; }
  SocketAddress GetLocalAddress() const;

 private:
  enum class State { kConnecting, kOpen, kShuttingDown, kClosing };
  struct WriteRequest;

  static void OnConnect(uv_connect_t* req, int status) noexcept;
  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) noexcept;
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) noexcept;
  static void OnWrite(uv_write_t* req, int status) noexcept;
  static void OnShutdown(uv_shutdown_t* req, int status) noexcept;
  // The handle is closed and freed (handle_ is empty): reports on_close.
  void OnHandleClosed();
  void Activity();
  uv_stream_t* stream() { return handle_.stream(); }

  UvHandle<uv_tcp_t> handle_;
  Options options_;
  std::shared_ptr<size_t> slot_;
  State state_ = State::kOpen;
  CloseReason close_reason_ = CloseReason::kLocal;
  bool reading_ = false;
  size_t pending_output_bytes_ = 0;
  SocketAddress peer_;
  Callbacks callbacks_;
  ConnectCallback on_connected_;
  Timer idle_timer_;
  internal::DeathWatch death_watch_;
};

}  // namespace kdns::loop

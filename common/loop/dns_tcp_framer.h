// DnsTcpFramer: splits a TCP byte stream into DNS messages framed by a two-byte length
// (RFC 1035 4.2.2, RFC 7766 8). Pure: no I/O and no clock; the caller feeds it bytes as they
// arrive, with the time they arrived.
//
// Complete messages are handed out as soon as they are framed, straight from the fed
// bytes where possible (no copy); only an incomplete tail is buffered, so the buffer
// holds at most one partial message (65535 + 2 bytes, and its capacity never grows past
// the frame it holds) while the consumer keeps up. When the consumer pauses (the
// per-connection cap on outstanding queries), the unprocessed rest of the fed chunk is
// kept until Resume(); the owner stops reading meanwhile, so the buffer is bounded by one
// message plus one read.
//
// Timing (RFC 7766 6.2.3, Knot's tcp-io-timeout): partial_frame_since_ms() is when the
// partial frame now waiting for bytes began: the time of the Feed that brought its first
// byte, or of the Resume that found it among the kept bytes (the time we were not reading
// is not the client's). Bytes that continue the same frame do not move it, so the owner can
// hold a started frame to a deadline however the client trickles it.
//
// A length below the 12-byte DNS header is a framing error: the stream cannot be resynced.
//
// Thread: none of its own; used by one DnsTcpConnection on its loop's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace kdns::loop {

class DnsTcpFramer {
 public:
  static constexpr size_t kMinMessageBytes = 12;  // the DNS header
  static constexpr size_t kMaxFrameBytes = 65535 + 2;

  // What the consumer wants after one message.
  enum class Next {
    kContinue,  // deliver the next one
    kPause,     // keep the rest until Resume()
    kAbandon,   // the consumer destroyed the framer's owner: touch nothing, return at once
  };
  enum class Result { kOk, kAbandoned, kBadLength };
  using MessageCallback = std::function<Next(std::span<const uint8_t> message)>;

  // Delivers every complete message from previously buffered bytes and `bytes`, which
  // arrived at now_ms (any monotonic milliseconds; only differences matter to the owner).
  [[nodiscard]] Result Feed(std::span<const uint8_t> bytes, const MessageCallback& on_message,
                            uint64_t now_ms = 0);
  // After a kPause: delivers what was kept, reading again from now_ms.
  [[nodiscard]] Result Resume(const MessageCallback& on_message, uint64_t now_ms = 0);

  bool paused() const { return paused_; }
  size_t buffered_bytes() const { return buffer_.size(); }
  size_t buffer_capacity() const { return buffer_.capacity(); }
  // When the partial frame waiting for more bytes began; nullopt if there is none (nothing
  // buffered, or paused: the kept bytes wait for the consumer, not for the client).
  std::optional<uint64_t> partial_frame_since_ms() const;

 private:
  // Appends to the partial frame, growing the buffer geometrically but never past the
  // frame's size once that is known.
  void Append(std::span<const uint8_t> bytes);

  std::vector<uint8_t> buffer_;
  bool paused_ = false;
  uint64_t partial_since_ms_ = 0;  // valid while a partial frame is buffered, not paused
};

}  // namespace kdns::loop

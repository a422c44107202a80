// DnsTcpFramer: splits a TCP byte stream into DNS messages framed by a two-byte length
// (RFC 1035 4.2.2, RFC 7766 8). Pure: no I/O, the caller feeds it bytes as they arrive.
//
// Complete messages are handed out as soon as they are framed, straight from the fed
// bytes where possible (no copy); only an incomplete tail is buffered, so the buffer
// holds at most one partial message (65535 + 2 bytes) while the consumer keeps up. When
// the consumer pauses (the per-connection cap on outstanding queries), the unprocessed
// rest of the fed chunk is kept until Resume(); the owner stops reading meanwhile, so the
// buffer is bounded by one message plus one read.
//
// A length below the 12-byte DNS header is a framing error: the stream cannot be resynced.
//
// Thread: none of its own; used by one DnsTcpConnection on its loop's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

  // Delivers every complete message from previously buffered bytes and `bytes`.
  [[nodiscard]] Result Feed(std::span<const uint8_t> bytes, const MessageCallback& on_message);
  // After a kPause: delivers what was kept.
  [[nodiscard]] Result Resume(const MessageCallback& on_message);

  bool paused() const { return paused_; }
  size_t buffered_bytes() const { return buffer_.size(); }

 private:
  std::vector<uint8_t> buffer_;
  bool paused_ = false;
};

}  // namespace kdns::loop

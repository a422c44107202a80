#include "common/loop/dns_tcp_framer.h"

#include <algorithm>

namespace kdns::loop {
namespace {

size_t FrameLength(const uint8_t* p) { return (static_cast<size_t>(p[0]) << 8) | p[1]; }

}  // namespace

DnsTcpFramer::Result DnsTcpFramer::Feed(std::span<const uint8_t> bytes,
                                        const MessageCallback& on_message) {
  if (paused_) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return Result::kOk;
  }
  if (!buffer_.empty()) {
    // Complete the buffered partial frame, taking only the bytes it needs.
    while (buffer_.size() < 2 && !bytes.empty()) {
      buffer_.push_back(bytes.front());
      bytes = bytes.subspan(1);
    }
    if (buffer_.size() < 2) return Result::kOk;
    size_t length = FrameLength(buffer_.data());
    if (length < kMinMessageBytes) return Result::kBadLength;
    size_t take = std::min(2 + length - buffer_.size(), bytes.size());
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.begin() + take);
    bytes = bytes.subspan(take);
    if (buffer_.size() < 2 + length) return Result::kOk;
    // Move the frame out of the member: the callback may destroy this framer.
    std::vector<uint8_t> frame;
    frame.swap(buffer_);
    Next next = on_message(std::span<const uint8_t>(frame).subspan(2));
    if (next == Next::kAbandon) return Result::kAbandoned;
    if (next == Next::kPause) {
      paused_ = true;
      buffer_.assign(bytes.begin(), bytes.end());
      return Result::kOk;
    }
  }
  size_t used = 0;
  while (bytes.size() - used >= 2) {
    size_t length = FrameLength(bytes.data() + used);
    if (length < kMinMessageBytes) return Result::kBadLength;
    if (bytes.size() - used < 2 + length) break;
    Next next = on_message(bytes.subspan(used + 2, length));
    if (next == Next::kAbandon) return Result::kAbandoned;
    used += 2 + length;
    if (next == Next::kPause) {
      paused_ = true;
      break;
    }
  }
  buffer_.assign(bytes.begin() + used, bytes.end());
  return Result::kOk;
}

DnsTcpFramer::Result DnsTcpFramer::Resume(const MessageCallback& on_message) {
  if (!paused_) return Result::kOk;
  paused_ = false;
  std::vector<uint8_t> kept;
  kept.swap(buffer_);
  return Feed(kept, on_message);
}

}  // namespace kdns::loop

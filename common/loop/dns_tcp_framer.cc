#include "common/loop/dns_tcp_framer.h"

#include <algorithm>

namespace kdns::loop {
namespace {

size_t FrameLength(const uint8_t* p) { return (static_cast<size_t>(p[0]) << 8) | p[1]; }

}  // namespace

std::optional<uint64_t> DnsTcpFramer::partial_frame_since_ms() const {
  if (paused_ || buffer_.empty()) return std::nullopt;
  return partial_since_ms_;
}

void DnsTcpFramer::Append(std::span<const uint8_t> bytes) {
  const size_t needed = buffer_.size() + bytes.size();
  if (needed > buffer_.capacity()) {
    size_t limit = kMaxFrameBytes;
    if (buffer_.size() >= 2) limit = 2 + FrameLength(buffer_.data());
    buffer_.reserve(std::max(needed, std::min(2 * buffer_.capacity(), limit)));
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

DnsTcpFramer::Result DnsTcpFramer::Feed(std::span<const uint8_t> bytes,
                                        const MessageCallback& on_message, uint64_t now_ms) {
  if (paused_) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return Result::kOk;
  }
  if (!buffer_.empty()) {
    // Complete the buffered partial frame, taking only the bytes it needs.
    const size_t prefix_take = std::min(2 - std::min<size_t>(buffer_.size(), 2), bytes.size());
    Append(bytes.first(prefix_take));
    bytes = bytes.subspan(prefix_take);
    if (buffer_.size() < 2) return Result::kOk;
    size_t length = FrameLength(buffer_.data());
    if (length < kMinMessageBytes) return Result::kBadLength;
    size_t take = std::min(2 + length - buffer_.size(), bytes.size());
    Append(bytes.first(take));
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
      buffer_.assign(bytes.begin() + used, bytes.end());
      return Result::kOk;
    }
  }
  if (used < bytes.size()) {
    // A new partial frame begins in this chunk (the buffer is empty here: it was empty on
    // entry, or its frame was completed and moved out).
    Append(bytes.subspan(used));
    partial_since_ms_ = now_ms;
  }
  return Result::kOk;
}

DnsTcpFramer::Result DnsTcpFramer::Resume(const MessageCallback& on_message, uint64_t now_ms) {
  if (!paused_) return Result::kOk;
  paused_ = false;
  std::vector<uint8_t> kept;
  kept.swap(buffer_);
  return Feed(kept, on_message, now_ms);
}

}  // namespace kdns::loop

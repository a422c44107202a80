#include "common/dns/wire_reader.h"

#include <algorithm>

#include "common/dns/header.h"

namespace kdns::dns {

NameStarts::NameStarts(size_t message_size) {
  const size_t words = std::min(message_size, kMaxMessage) / 64 + 1;
  std::fill_n(bits_.begin(), std::min(words, bits_.size()), 0);
}

bool WireReader::ReadU8(uint8_t* value) {
  if (remaining() < 1) return false;
  *value = message_[offset_];
  offset_ += 1;
  return true;
}

bool WireReader::ReadU16(uint16_t* value) {
  if (remaining() < 2) return false;
  *value = static_cast<uint16_t>(message_[offset_] << 8 | message_[offset_ + 1]);
  offset_ += 2;
  return true;
}

bool WireReader::ReadU32(uint32_t* value) {
  if (remaining() < 4) return false;
  *value = static_cast<uint32_t>(message_[offset_]) << 24 |
           static_cast<uint32_t>(message_[offset_ + 1]) << 16 |
           static_cast<uint32_t>(message_[offset_ + 2]) << 8 | message_[offset_ + 3];
  offset_ += 4;
  return true;
}

bool WireReader::ReadBytes(size_t size, std::span<const uint8_t>* bytes) {
  if (remaining() < size) return false;
  *bytes = message_.subspan(offset_, size);
  offset_ += size;
  return true;
}

bool WireReader::Skip(size_t size) {
  if (remaining() < size) return false;
  offset_ += size;
  return true;
}

ParseError WireReader::ReadName(Name* name) {
  Name result;
  size_t position = offset_;
  size_t limit = end_;              // after the first pointer, the whole message
  size_t sequence_start = offset_;  // start of the label sequence being read
  size_t first_pointer = 0;         // where the first pointer was; bytes up to it were read
  size_t hops = 0;
  bool jumped = false;
  while (true) {
    if (position >= limit) return ParseError::kTruncated;
    uint8_t length = message_[position];
    if (starts_ != nullptr && !jumped && (length & 0xC0) == 0) starts_->Mark(position);
    switch (length & 0xC0) {
      case 0x00: {
        if (length == 0) {
          if (!jumped) offset_ = position + 1;
          *name = result;
          return ParseError::kOk;
        }
        if (limit - position - 1 < length) return ParseError::kTruncated;
        if (!result.AppendLabel(message_.subspan(position + 1, length))) {
          return ParseError::kNameTooLong;
        }
        position += 1 + length;
        break;
      }
      case 0xC0: {
        if (limit - position < 2) return ParseError::kTruncated;
        size_t target = static_cast<size_t>(length & 0x3F) << 8 | message_[position + 1];
        if (!jumped) {
          first_pointer = position;
          offset_ = position + 2;
          jumped = true;
          limit = message_.size();
        }
        if (target < kHeaderSize) {
          // Into the header, where no name lives: what it reads there changes when a
          // count is rewritten (an OPT record appended), so a reply passed on would not
          // parse the same way. No real server writes one.
          return ParseError::kBadPointer;
        }
        if (target >= sequence_start) {
          // Into what was already read (itself included) is a loop; beyond it, forward.
          return target <= first_pointer ? ParseError::kPointerLoop : ParseError::kBadPointer;
        }
        if (starts_ != nullptr && !starts_->Contains(target)) return ParseError::kBadPointer;
        if (++hops > kMaxPointerHops) return ParseError::kPointerLoop;
        position = target;
        sequence_start = target;
        break;
      }
      default:
        // 0x40 (extended label types, RFC 6891 §5) and 0x80 are not supported.
        return ParseError::kBadLabelType;
    }
  }
}

ParseError WireReader::SkipName(bool* is_root) {
  size_t position = offset_;
  size_t total = 0;
  bool first = true;
  while (true) {
    if (position >= end_) return ParseError::kTruncated;
    uint8_t length = message_[position];
    if ((length & 0xC0) == 0xC0) {
      if (end_ - position < 2) return ParseError::kTruncated;
      offset_ = position + 2;
      if (is_root != nullptr) *is_root = false;
      return ParseError::kOk;
    }
    if ((length & 0xC0) != 0) return ParseError::kBadLabelType;
    if (length == 0) {
      offset_ = position + 1;
      if (is_root != nullptr) *is_root = first;
      return ParseError::kOk;
    }
    total += 1 + length;
    if (total + 1 > Name::kMaxWireLength) return ParseError::kNameTooLong;
    if (end_ - position - 1 < length) return ParseError::kTruncated;
    position += 1 + length;
    first = false;
  }
}

}  // namespace kdns::dns

// Bounds-checked reading of a DNS message: integers in network order, raw bytes, and names
// with decompression (RFC 1035 §4.1.4). A reader covers [offset, end) of one message;
// compression pointers may point anywhere before the name in the whole message. Every
// read checks its bounds and reports failure instead of reading past the end. A reader
// borrows the message bytes and must not outlive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/dns/errors.h"
#include "common/dns/name.h"

namespace kdns::dns {

class WireReader {
 public:
  // Generous for real names (a pointer usually follows at least one label, and a name has
  // at most 127 labels) and small enough to bound the work per name.
  static constexpr size_t kMaxPointerHops = 128;

  explicit WireReader(std::span<const uint8_t> message)
      : message_(message), offset_(0), end_(message.size()) {}
  // A reader limited to [offset, end) of `message` (for example one record's rdata).
  WireReader(std::span<const uint8_t> message, size_t offset, size_t end)
      : message_(message), offset_(offset), end_(end) {}

  size_t offset() const { return offset_; }
  size_t end() const { return end_; }
  size_t remaining() const { return end_ - offset_; }
  bool AtEnd() const { return offset_ == end_; }
  std::span<const uint8_t> message() const { return message_; }

  [[nodiscard]] bool ReadU8(uint8_t* value);
  [[nodiscard]] bool ReadU16(uint16_t* value);
  [[nodiscard]] bool ReadU32(uint32_t* value);
  // `size` bytes as a view into the message.
  [[nodiscard]] bool ReadBytes(size_t size, std::span<const uint8_t>* bytes);
  [[nodiscard]] bool Skip(size_t size);

  // Reads a possibly compressed name. Pointers must point strictly before the start of the
  // label sequence being read (so loops cannot happen); a pointer into the sequence itself
  // is kPointerLoop, one past it or past the message is kBadPointer.
  [[nodiscard]] ParseError ReadName(Name* name);
  // Steps over a name without following pointers (the hot path does not need the name).
  // Checks label types and bounds; pointer targets are not checked.
  [[nodiscard]] ParseError SkipName(bool* is_root = nullptr);

 private:
  std::span<const uint8_t> message_;
  size_t offset_;
  size_t end_;
};

}  // namespace kdns::dns

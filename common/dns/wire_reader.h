// Bounds-checked reading of a DNS message: integers in network order, raw bytes, and names
// with decompression (RFC 1035 §4.1.4). A reader covers [offset, end) of one message;
// compression pointers may point anywhere before the name in the whole message. Every
// read checks its bounds and reports failure instead of reading past the end. A reader
// borrows the message bytes and must not outlive them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/dns/errors.h"
#include "common/dns/name.h"

namespace kdns::dns {

// Where the names read so far from one message begin: the position of each of their labels
// (and of each terminating root label). RFC 1035 §4.1.4 lets a compression pointer replace
// a name's tail by "a prior occurance of the same name"; a reader given NameStarts accepts
// only pointers to such a position. Without it, a pointer could land in a fixed field (a
// type, a TTL, an rdata length) and read it as labels: the message parses, but the name
// changes when that field is rewritten (the cache counts TTLs down in place), so a reply
// passed on would no longer parse as the one we checked. No real server writes one.
//
// One bit per octet on the stack (8 KiB); only the words the message covers are cleared.
class NameStarts {
 public:
  explicit NameStarts(size_t message_size);
  NameStarts(const NameStarts&) = delete;
  NameStarts& operator=(const NameStarts&) = delete;

  void Mark(size_t position) {
    if (position < kMaxMessage) bits_[position / 64] |= uint64_t{1} << (position % 64);
  }
  bool Contains(size_t position) const {
    return position < kMaxMessage && (bits_[position / 64] >> (position % 64) & 1) != 0;
  }

 private:
  static constexpr size_t kMaxMessage = 65536;
  std::array<uint64_t, kMaxMessage / 64> bits_;  // cleared up to the message's size only
};

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
  // Checks compression pointers against `starts` and adds the names it reads to it; several
  // readers of one message (its records' rdata) share one.
  WireReader(std::span<const uint8_t> message, size_t offset, size_t end, NameStarts* starts)
      : message_(message), offset_(offset), end_(end), starts_(starts) {}

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
  // is kPointerLoop, one past it or past the message is kBadPointer, and so is one to where
  // no name began when the reader has NameStarts.
  [[nodiscard]] ParseError ReadName(Name* name);
  // Steps over a name without following pointers (the hot path does not need the name).
  // Checks label types and bounds; pointer targets are not checked.
  [[nodiscard]] ParseError SkipName(bool* is_root = nullptr);

 private:
  std::span<const uint8_t> message_;
  size_t offset_;
  size_t end_;
  NameStarts* starts_ = nullptr;
};

}  // namespace kdns::dns

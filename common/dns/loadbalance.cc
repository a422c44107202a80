#include "common/dns/loadbalance.h"

#include <algorithm>
#include <array>
#include <optional>

#include "common/dns/header.h"
#include "common/dns/name.h"
#include "common/dns/types.h"
#include "common/dns/wire_reader.h"

namespace kdns::dns {
namespace {

// One record as the rotation sees it: where its owner is written, and its fixed part after
// the owner (type, class, TTL, rdata length and rdata), which is what moves.
struct Tail {
  size_t owner = 0;    // the owner's first octet
  size_t written = 0;  // where the owner's first label is: `owner`, or a bare pointer's target
  size_t offset = 0;
  size_t size = 0;
  uint16_t type = 0;
  uint16_t cls = 0;
};

bool IsAddress(uint16_t type) {
  return type == static_cast<uint16_t>(RrType::kA) || type == static_cast<uint16_t>(RrType::kAaaa);
}

bool IsZoneTransfer(uint16_t qtype) {
  return qtype == static_cast<uint16_t>(RrType::kAxfr) ||
         qtype == static_cast<uint16_t>(RrType::kIxfr);
}

[[nodiscard]] bool ReadRecord(WireReader& reader, Tail* tail) {
  const std::span<const uint8_t> message = reader.message();
  tail->owner = reader.offset();
  tail->written = tail->owner;
  if (tail->owner + 1 < message.size() && (message[tail->owner] & 0xC0) == 0xC0) {
    tail->written =
        static_cast<size_t>(message[tail->owner] & 0x3F) << 8 | message[tail->owner + 1];
  }
  uint16_t rdata_size = 0;
  if (reader.SkipName() != ParseError::kOk) return false;
  tail->offset = reader.offset();
  if (!reader.ReadU16(&tail->type) || !reader.ReadU16(&tail->cls) || !reader.Skip(4) ||
      !reader.ReadU16(&rdata_size) || !reader.Skip(rdata_size)) {
    return false;
  }
  tail->size = reader.offset() - tail->offset;
  return true;
}

// The owner name of `tail`, decoded (nullopt when it cannot be).
std::optional<Name> OwnerOf(std::span<const uint8_t> message, const Tail& tail) {
  WireReader reader(message, tail.owner, message.size());
  Name name;
  if (reader.ReadName(&name) != ParseError::kOk) return std::nullopt;
  return name;
}

// Consecutive address records of one RRset: one owner (however each is written), type and
// class, and tails of one size. Rotating moves the tails only: every owner stays where it
// was written, so no compression pointer into an owner changes its meaning, and the owners
// need not be written alike (a compressor writes the first in full or as a pointer into the
// question, the rest as pointers to the first).
class Run {
 public:
  // The most records a message can hold (each at least a 2-octet pointer and 14 octets).
  static constexpr size_t kMaxRecords = 65536 / 16;

  // Whether the record belongs to this run; false ends it.
  bool Takes(std::span<const uint8_t> message, const Tail& tail) {
    if (count_ == 0 || count_ >= kMaxRecords || tail.type != first_.type ||
        tail.cls != first_.cls || tail.size != first_.size) {
      return false;
    }
    // The same octets (both pointers to one place, or one pointing at the other's labels):
    // the same name, without decoding either. Else the names are compared.
    if (tail.written == first_.written) return true;
    if (!owner_) owner_ = OwnerOf(message, first_);
    const std::optional<Name> owner = OwnerOf(message, tail);
    return owner_ && owner && *owner == *owner_;
  }
  void Add(const Tail& tail) { offsets_[count_++] = static_cast<uint16_t>(tail.offset); }
  void Clear() { count_ = 0; }
  // A new run from the record: empty unless it is an address record.
  void Restart(const Tail& tail) {
    Clear();
    if (!IsAddress(tail.type)) return;
    owner_.reset();
    first_ = tail;
    Add(tail);
  }
  // Rotates the run's records left by `turn` (reversing [0, k), [k, n), then [0, n)); 1 when
  // it is an RRset of two or more.
  size_t Rotate(std::span<uint8_t> message, uint32_t turn) const {
    if (count_ < 2) return 0;
    const size_t shift = turn % count_;
    Reverse(message, 0, shift);
    Reverse(message, shift, count_);
    Reverse(message, 0, count_);
    return 1;
  }

 private:
  // Reverses the order of the tails [from, to).
  void Reverse(std::span<uint8_t> message, size_t from, size_t to) const {
    for (; from + 1 < to; ++from, --to) {
      uint8_t* a = message.data() + offsets_[from];
      std::swap_ranges(a, a + first_.size, message.data() + offsets_[to - 1]);
    }
  }

  std::optional<Name> owner_;  // the first record's owner, decoded once a comparison needs it
  Tail first_;
  size_t count_ = 0;
  std::array<uint16_t, kMaxRecords> offsets_;  // of each tail; only [0, count_) is set
};

}  // namespace

std::string_view LoadBalanceName(LoadBalance mode) {
  return mode == LoadBalance::kRoundRobin ? "round_robin" : "off";
}

bool ParseLoadBalance(std::string_view text, LoadBalance* mode) {
  if (text == "round_robin") {
    *mode = LoadBalance::kRoundRobin;
  } else if (text == "off") {
    *mode = LoadBalance::kOff;
  } else {
    return false;
  }
  return true;
}

size_t RotateAddressRrsets(std::span<uint8_t> message, uint32_t turn) {
  if (message.size() < kHeaderSize || RcodeOf(message) != Rcode::kNoError) return 0;
  WireReader reader(message);
  uint16_t qdcount = 0;
  std::array<uint16_t, 3> counts{};  // answer, authority, additional
  if (!reader.Skip(4) || !reader.ReadU16(&qdcount) || !reader.ReadU16(&counts[0]) ||
      !reader.ReadU16(&counts[1]) || !reader.ReadU16(&counts[2])) {
    return 0;
  }
  // Most answers hold one record a section (a ClusterIP Service, a single upstream
  // address): nothing to rotate, and no name to read.
  if (std::all_of(counts.begin(), counts.end(), [](uint16_t count) { return count < 2; })) {
    return 0;
  }
  for (uint16_t i = 0; i < qdcount; ++i) {
    uint16_t qtype = 0;
    if (reader.SkipName() != ParseError::kOk || !reader.ReadU16(&qtype) || !reader.Skip(2) ||
        IsZoneTransfer(qtype)) {
      return 0;
    }
  }
  size_t rotated = 0;
  Run run;
  for (const uint16_t count : counts) {
    run.Clear();  // RRsets never span sections
    for (uint16_t i = 0; i < count; ++i) {
      Tail tail;
      if (!ReadRecord(reader, &tail)) return rotated;  // the run in progress stays
      if (run.Takes(message, tail)) {
        run.Add(tail);
        continue;
      }
      rotated += run.Rotate(message, turn);
      run.Restart(tail);
    }
    rotated += run.Rotate(message, turn);
  }
  return rotated;
}

}  // namespace kdns::dns

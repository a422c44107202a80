#include "common/upstream/dns0x20.h"

#include <array>
#include <cstring>

#include "common/dns/header.h"

namespace kdns::upstream {

std::string_view Dns0x20Name(Dns0x20 mode) {
  switch (mode) {
    case Dns0x20::kOff:
      return "off";
    case Dns0x20::kAuto:
      return "auto";
    case Dns0x20::kOn:
      return "on";
  }
  return "?";
}

bool ParseDns0x20(std::string_view text, Dns0x20* mode) {
  for (Dns0x20 candidate : {Dns0x20::kOff, Dns0x20::kAuto, Dns0x20::kOn}) {
    if (text == Dns0x20Name(candidate)) {
      *mode = candidate;
      return true;
    }
  }
  return false;
}

namespace {

bool IsAsciiLetter(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The offsets of the length octets of the labels of the name at `offset` in `message`,
// following compression pointers (each must point before the labels read so far, as
// WireReader::ReadName requires), the root's excluded; and where the name ends in place.
struct LabelWalk {
  std::array<uint16_t, dns::Name::kMaxWireLength / 2> offsets;
  size_t count = 0;
  size_t end = 0;  // just after the name where it starts (its pointer or root octet)
};

bool WalkLabels(std::span<const uint8_t> message, size_t offset, LabelWalk* walk) {
  walk->count = 0;
  walk->end = 0;
  size_t floor = offset;  // a pointer must point before this
  // Each step reads a label or follows a pointer: at most 127 labels, and fewer pointers.
  for (size_t step = 0; step < 2 * walk->offsets.size() + 2; ++step) {
    if (offset >= message.size()) return false;
    const uint8_t length = message[offset];
    if ((length & 0xC0) == 0xC0) {
      if (offset + 1 >= message.size()) return false;
      if (walk->end == 0) walk->end = offset + 2;
      const size_t target = static_cast<size_t>((length & 0x3F) << 8 | message[offset + 1]);
      if (target >= floor) return false;
      floor = target;
      offset = target;
      continue;
    }
    if ((length & 0xC0) != 0) return false;  // extended label types: not in replies we take
    if (length == 0) {
      if (walk->end == 0) walk->end = offset + 1;
      return true;
    }
    if (walk->count == walk->offsets.size() || offset + 1 + length > message.size()) {
      return false;
    }
    walk->offsets[walk->count++] = static_cast<uint16_t>(offset);
    offset += 1 + length;
  }
  return false;
}

// Writes `asked`'s labels over the name walked, when it is `sent` or an ancestor of it spelt
// exactly as `sent` spells it (the labels have the same lengths, so they fit in place).
void RestoreName(std::span<uint8_t> message, const LabelWalk& walk, const dns::Name& sent,
                 const dns::Name& asked) {
  if (walk.count == 0 || walk.count > sent.label_count()) return;
  const size_t skip = sent.label_count() - walk.count;
  for (size_t i = 0; i < walk.count; ++i) {
    const std::string_view label = sent.label(skip + i);
    const uint8_t* at = message.data() + walk.offsets[i];
    if (at[0] != label.size() || std::memcmp(at + 1, label.data(), label.size()) != 0) return;
  }
  for (size_t i = 0; i < walk.count; ++i) {
    const std::string_view label = asked.label(skip + i);
    std::memcpy(message.data() + walk.offsets[i] + 1, label.data(), label.size());
  }
}

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

}  // namespace

dns::Name Randomize0x20(const dns::Name& name, SecureRandom& random) {
  dns::Name out;
  uint64_t bits = 0;
  int bits_left = 0;
  std::array<uint8_t, dns::Name::kMaxLabelLength> label;
  for (size_t i = 0; i < name.label_count(); ++i) {
    const std::string_view in = name.label(i);
    for (size_t j = 0; j < in.size(); ++j) {
      uint8_t c = static_cast<uint8_t>(in[j]);
      if (IsAsciiLetter(c)) {
        if (bits_left == 0) {
          bits = random.Next64();
          bits_left = 64;
        }
        c = (bits & 1) != 0 ? static_cast<uint8_t>(c & ~0x20) : static_cast<uint8_t>(c | 0x20);
        bits >>= 1;
        --bits_left;
      }
      label[j] = c;
    }
    // The same lengths as a valid name's: cannot fail.
    (void)out.AppendLabel(std::span<const uint8_t>(label.data(), in.size()));
  }
  return out;
}

void Restore0x20(std::span<uint8_t> reply, const dns::Name& sent, const dns::Name& asked) {
  if (reply.size() < dns::kHeaderSize || sent.IdenticalTo(asked)) return;
  const size_t questions = LoadU16(reply.data() + 4);
  const size_t records = static_cast<size_t>(LoadU16(reply.data() + 6)) +
                         LoadU16(reply.data() + 8) + LoadU16(reply.data() + 10);
  LabelWalk walk;
  size_t offset = dns::kHeaderSize;
  for (size_t i = 0; i < questions + records; ++i) {
    if (!WalkLabels(reply, offset, &walk)) return;
    RestoreName(reply, walk, sent, asked);
    offset = walk.end + 4;  // type, class
    if (i < questions) continue;
    offset += 4;  // TTL
    if (offset + 2 > reply.size()) return;
    offset += 2 + LoadU16(reply.data() + offset);  // rdata
  }
}

void Restore0x20(dns::Message* reply, const dns::Name& sent, const dns::Name& asked) {
  if (sent.IdenticalTo(asked)) return;
  auto restore = [&](dns::Name& name) {
    if (name.label_count() > sent.label_count()) return;
    const size_t skip = sent.label_count() - name.label_count();
    if (name.IdenticalTo(skip == 0 ? sent : sent.StripLeft(skip))) {
      name = skip == 0 ? asked : asked.StripLeft(skip);
    }
  };
  for (auto& question : reply->questions) restore(question.name);
  for (auto* section : {&reply->answers, &reply->authorities, &reply->additionals}) {
    for (auto& record : *section) restore(record.owner);
  }
}

bool Echo0x20::Use(uint64_t now_ms) {
  if (options_.mode == Dns0x20::kOff) return false;
  if (state_ == State::kPlain && now_ms >= plain_until_ms_) {
    state_ = State::kUnknown;  // re-probed by the next queries
    wrong_in_a_row_ = 0;
  }
  return state_ != State::kPlain;
}

void Echo0x20::OnEchoed(const dns::Name& sent) {
  if (sent.IdenticalTo(sent.Lowercased())) return;
  wrong_in_a_row_ = 0;
  if (state_ == State::kUnknown) state_ = State::kEchoes;
}

Echo0x20::Verdict Echo0x20::OnWrongCase(uint64_t now_ms) {
  if (options_.mode != Dns0x20::kAuto) return Verdict::kDrop;
  if (state_ == State::kPlain) return Verdict::kRetryPlain;  // sent before the fallback
  if (++wrong_in_a_row_ >= options_.fallback_after) {
    state_ = State::kPlain;
    plain_until_ms_ = now_ms + options_.reprobe_after_ms;
    return Verdict::kFallBack;
  }
  return state_ == State::kUnknown ? Verdict::kRetryPlain : Verdict::kDrop;
}

}  // namespace kdns::upstream

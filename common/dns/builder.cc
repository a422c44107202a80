#include "common/dns/builder.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace kdns::dns {
namespace {

// Pointers hold 14 bits of offset (RFC 1035 §4.1.4).
constexpr size_t kMaxPointerOffset = 0x3FFF;
constexpr size_t kRecordFixedSize = 10;  // type, class, TTL, rdlength

}  // namespace

MessageBuilder::MessageBuilder(std::span<uint8_t> buffer, size_t max_size_bytes)
    : buffer_(buffer),
      limit_(std::min({buffer.size(), max_size_bytes, kMaxMessageSize})),
      position_(kHeaderSize) {
  // A buffer too small for a header is a caller bug; refuse everything rather than
  // writing past it.
  if (limit_ < kHeaderSize) {
    limit_ = 0;
    position_ = 0;
    truncated_ = true;
  }
}

BuildError MessageBuilder::SetEdns(const EdnsView& edns) {
  size_t size = kOptFixedSize + edns.options.size();
  if (edns.options.size() > 0xFFFF || position_ > limit_ || limit_ - position_ < size) {
    return BuildError::kNoSpace;
  }
  edns_ = edns;
  reserved_ = size;
  return BuildError::kOk;
}

BuildError MessageBuilder::StartResponse(const Query& query) {
  header_.id = query.header.id;
  header_.qr = true;
  header_.opcode = query.header.opcode;
  header_.rd = query.header.rd;
  header_.cd = query.header.cd;
  return AddQuestion(query.qname, query.qtype, query.qclass);
}

BuildError MessageBuilder::AddQuestion(const Name& name, RrType type, RrClass cls) {
  if (section_ != Section::kQuestion || in_rrset_) return BuildError::kBadOrder;
  size_t position = position_;
  size_t entries = entry_count_;
  if (!WriteName(name, true) || !Fits(4)) {
    position_ = position;
    entry_count_ = entries;
    return BuildError::kNoSpace;
  }
  PutU16(static_cast<uint16_t>(type));
  PutU16(static_cast<uint16_t>(cls));
  // The first question of a message is written in full at kHeaderSize, its suffixes the
  // first entries of the table (entry 0 is the whole name).
  if (counts_[0] == 0 && position == kHeaderSize && entries == 0 && !name.IsRoot()) {
    question_length_ = name.wire_length();
  }
  ++counts_[0];
  return BuildError::kOk;
}

BuildError MessageBuilder::AddRecord(Section section, const ResourceRecord& record) {
  return AddRrset(section, std::span<const ResourceRecord>(&record, 1));
}

BuildError MessageBuilder::AddRrset(Section section, std::span<const ResourceRecord> records) {
  BeginRrset(section);
  for (const ResourceRecord& record : records) Add(record);
  return EndRrset();
}

BuildError MessageBuilder::AddEncodedRecord(Section section, std::span<const uint8_t> record) {
  BeginRrset(section);
  if (in_rrset_ && rrset_error_ == BuildError::kOk) {
    if (Fits(record.size())) {
      PutBytes(record);
      ++counts_[static_cast<size_t>(rrset_section_)];
    } else {
      rrset_error_ = BuildError::kNoSpace;
    }
  }
  return EndRrset();
}

void MessageBuilder::BeginRrset(Section section) {
  if (in_rrset_ || section == Section::kQuestion || section < section_) {
    order_error_ = true;
    return;
  }
  in_rrset_ = true;
  section_ = section;
  rrset_section_ = section;
  rrset_position_ = position_;
  rrset_count_ = counts_[static_cast<size_t>(section)];
  rrset_entries_ = entry_count_;
  rrset_error_ = truncated_ ? BuildError::kTruncated : BuildError::kOk;
}

void MessageBuilder::Add(const Name& owner, RrType type, RrClass cls, uint32_t ttl_s,
                         const Rdata& rdata) {
  if (!in_rrset_) {
    order_error_ = true;
    return;
  }
  if (rrset_error_ != BuildError::kOk) return;
  BuildError error = WriteRecord(owner, type, cls, ttl_s, rdata);
  if (error != BuildError::kOk) {
    rrset_error_ = error;
    return;
  }
  ++counts_[static_cast<size_t>(rrset_section_)];
}

void MessageBuilder::AddAddress(const Name& owner, uint32_t ttl_s, const IpAddress& address) {
  if (!in_rrset_) {
    order_error_ = true;
    return;
  }
  if (rrset_error_ != BuildError::kOk) return;
  std::span<const uint8_t> bytes = address.bytes();
  if (!WriteName(owner, true) || !Fits(kRecordFixedSize + bytes.size())) {
    rrset_error_ = BuildError::kNoSpace;
    return;
  }
  PutU16(static_cast<uint16_t>(address.is_v4() ? RrType::kA : RrType::kAaaa));
  PutU16(static_cast<uint16_t>(RrClass::kIn));
  PutU32(ttl_s);
  PutU16(static_cast<uint16_t>(bytes.size()));
  PutBytes(bytes);
  ++counts_[static_cast<size_t>(rrset_section_)];
}

BuildError MessageBuilder::EndRrset() {
  const bool was_open = in_rrset_;
  in_rrset_ = false;
  if (!was_open) {
    order_error_ = false;
    return BuildError::kBadOrder;
  }
  if (order_error_) {
    order_error_ = false;
    rrset_error_ = BuildError::kBadOrder;
  }
  if (rrset_error_ == BuildError::kOk) return BuildError::kOk;
  position_ = rrset_position_;
  counts_[static_cast<size_t>(rrset_section_)] = rrset_count_;
  entry_count_ = rrset_entries_;
  if (rrset_error_ == BuildError::kNoSpace && rrset_section_ != Section::kAdditional) {
    truncated_ = true;
    header_.tc = true;
  }
  return rrset_error_;
}

std::span<const uint8_t> MessageBuilder::Finish() {
  if (in_rrset_) (void)EndRrset();
  if (limit_ < kHeaderSize) return {};
  Header header = header_;
  header.qdcount = counts_[0];
  header.ancount = counts_[1];
  header.nscount = counts_[2];
  header.arcount = counts_[3];
  size_t end = position_;
  if (edns_.has_value()) {
    ++header.arcount;
    // Reserved by SetEdns: position_ + reserved_ <= limit_.
    uint8_t* at = buffer_.data() + position_;
    const auto rcode = static_cast<unsigned>(header_.rcode);
    uint32_t ttl = static_cast<uint32_t>((rcode >> 4) & 0xFF) << 24 |
                   static_cast<uint32_t>(edns_->version) << 16 | (edns_->dnssec_ok ? 0x8000u : 0) |
                   (edns_->z & 0x7FFFu);
    size_t rdlength = edns_->options.size();
    uint8_t fixed[kOptFixedSize] = {0,
                                    0,
                                    static_cast<uint8_t>(RrType::kOpt),
                                    static_cast<uint8_t>(edns_->udp_payload_size >> 8),
                                    static_cast<uint8_t>(edns_->udp_payload_size),
                                    static_cast<uint8_t>(ttl >> 24),
                                    static_cast<uint8_t>(ttl >> 16),
                                    static_cast<uint8_t>(ttl >> 8),
                                    static_cast<uint8_t>(ttl),
                                    static_cast<uint8_t>(rdlength >> 8),
                                    static_cast<uint8_t>(rdlength)};
    std::memcpy(at, fixed, sizeof(fixed));
    if (rdlength > 0) std::memcpy(at + kOptFixedSize, edns_->options.data(), rdlength);
    end += kOptFixedSize + rdlength;
  }
  WriteHeader(header, buffer_.first<kHeaderSize>());
  return buffer_.first(end);
}

void MessageBuilder::PutU16(uint16_t value) {
  buffer_[position_] = static_cast<uint8_t>(value >> 8);
  buffer_[position_ + 1] = static_cast<uint8_t>(value);
  position_ += 2;
}

void MessageBuilder::PutU32(uint32_t value) {
  PutU16(static_cast<uint16_t>(value >> 16));
  PutU16(static_cast<uint16_t>(value));
}

void MessageBuilder::PutBytes(std::span<const uint8_t> bytes) {
  if (!bytes.empty()) std::memcpy(buffer_.data() + position_, bytes.data(), bytes.size());
  position_ += bytes.size();
}

std::optional<uint16_t> MessageBuilder::FindSuffix(std::span<const uint8_t> suffix,
                                                   size_t label_count) const {
  for (size_t e = 0; e < entry_count_; ++e) {
    if (entries_[e].label_count != label_count) continue;
    // Walk the earlier name in the buffer (following our own, always backward, pointers)
    // alongside the suffix.
    size_t at = entries_[e].offset;
    size_t s = 0;
    bool equal = true;
    while (true) {
      uint8_t length = buffer_[at];
      if ((length & 0xC0) == 0xC0) {
        at = static_cast<size_t>(length & 0x3F) << 8 | buffer_[at + 1];
        continue;
      }
      if (length != suffix[s]) {
        equal = false;
        break;
      }
      if (length == 0) break;
      for (size_t i = 1; i <= length; ++i) {
        if (ToLowerAscii(buffer_[at + i]) != ToLowerAscii(suffix[s + i])) {
          equal = false;
          break;
        }
      }
      if (!equal) break;
      at += 1 + length;
      s += 1 + length;
    }
    if (equal) return entries_[e].offset;
  }
  return std::nullopt;
}

bool MessageBuilder::IsQuestionName(const Name& name) const {
  if (name.wire_length() != question_length_) return false;
  const uint8_t* written = buffer_.data() + kHeaderSize;
  const uint8_t* wire = name.wire().data();
  // Usually the very name asked (the owner of an answer): exact, then case-insensitive.
  if (std::memcmp(written, wire, question_length_) == 0) return true;
  // Length octets are below 64, so folding them with the letters is harmless.
  for (size_t i = 0; i < question_length_; ++i) {
    if (ToLowerAscii(written[i]) != ToLowerAscii(wire[i])) return false;
  }
  return true;
}

bool MessageBuilder::WriteName(const Name& name, bool compress) {
  if (compress && question_length_ != 0 && IsQuestionName(name)) {
    // What the search below finds first for this name (entry 0, the question), without
    // the search: a pointer to the question, no new entries.
    if (!Fits(2)) return false;
    PutU16(static_cast<uint16_t>(0xC000 | kHeaderSize));
    return true;
  }
  std::span<const uint8_t> wire = name.wire();
  const size_t labels = name.label_count();
  // Offsets of each label in `wire`; index `labels` is the root octet.
  std::array<uint8_t, Name::kMaxWireLength / 2 + 1> offsets;
  size_t offset = 0;
  for (size_t i = 0; i <= labels; ++i) {
    offsets[i] = static_cast<uint8_t>(offset);
    offset += 1 + wire[offset];
  }
  size_t match = labels;  // index of the longest suffix already written
  uint16_t match_offset = 0;
  // Nothing to find in an empty table (the question): no search.
  for (size_t i = 0; i < labels && entry_count_ > 0; ++i) {
    if (auto found = FindSuffix(wire.subspan(offsets[i]), labels - i)) {
      match = i;
      match_offset = *found;
      break;
    }
  }
  const bool use_pointer = compress && match < labels;
  const size_t literal = use_pointer ? offsets[match] : wire.size();
  if (!Fits(literal + (use_pointer ? 2 : 0))) return false;
  const size_t start = position_;
  PutBytes(wire.first(literal));
  if (use_pointer) PutU16(static_cast<uint16_t>(0xC000 | match_offset));
  // Remember the suffixes written here that were not known yet.
  for (size_t i = 0; i < match && entry_count_ < kMaxCompressionEntries; ++i) {
    size_t at = start + offsets[i];
    if (at > kMaxPointerOffset) break;
    entries_[entry_count_++] = {static_cast<uint16_t>(at), static_cast<uint8_t>(labels - i)};
  }
  return true;
}

bool MessageBuilder::WriteCharacterString(std::string_view text) {
  if (!Fits(1 + text.size())) return false;
  buffer_[position_++] = static_cast<uint8_t>(text.size());
  PutBytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  return true;
}

BuildError MessageBuilder::WriteRdata(const Rdata& rdata) {
  constexpr BuildError kNoSpace = BuildError::kNoSpace;
  return std::visit(
      [&](const auto& value) -> BuildError {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, RdataOpaque>) {
          if (!Fits(value.bytes.size())) return kNoSpace;
          PutBytes(value.bytes);
        } else if constexpr (std::is_same_v<T, RdataA> || std::is_same_v<T, RdataAaaa>) {
          if (!Fits(value.address.bytes().size())) return kNoSpace;
          PutBytes(value.address.bytes());
        } else if constexpr (std::is_same_v<T, RdataNs>) {
          if (!WriteName(value.host, true)) return kNoSpace;
        } else if constexpr (std::is_same_v<T, RdataCname> || std::is_same_v<T, RdataPtr>) {
          if (!WriteName(value.target, true)) return kNoSpace;
        } else if constexpr (std::is_same_v<T, RdataDname>) {
          if (!WriteName(value.target, false)) return kNoSpace;  // RFC 6672 §2.5
        } else if constexpr (std::is_same_v<T, RdataSoa>) {
          if (!WriteName(value.mname, true) || !WriteName(value.rname, true) || !Fits(20)) {
            return kNoSpace;
          }
          PutU32(value.serial);
          PutU32(value.refresh_s);
          PutU32(value.retry_s);
          PutU32(value.expire_s);
          PutU32(value.minimum_s);
        } else if constexpr (std::is_same_v<T, RdataMx>) {
          if (!Fits(2)) return kNoSpace;
          PutU16(value.preference);
          if (!WriteName(value.exchange, true)) return kNoSpace;
        } else if constexpr (std::is_same_v<T, RdataSrv>) {
          if (!Fits(6)) return kNoSpace;
          PutU16(value.priority);
          PutU16(value.weight);
          PutU16(value.port);
          if (!WriteName(value.target, false)) return kNoSpace;  // RFC 2782, RFC 3597 §4
        } else if constexpr (std::is_same_v<T, RdataTxt>) {
          if (value.strings.empty()) return BuildError::kBadRdata;
          for (const std::string& text : value.strings) {
            if (text.size() > 255) return BuildError::kBadRdata;
            if (!WriteCharacterString(text)) return kNoSpace;
          }
        } else if constexpr (std::is_same_v<T, RdataHinfo>) {
          if (value.cpu.size() > 255 || value.os.size() > 255) return BuildError::kBadRdata;
          if (!WriteCharacterString(value.cpu) || !WriteCharacterString(value.os)) return kNoSpace;
        }
        return BuildError::kOk;
      },
      rdata);
}

BuildError MessageBuilder::WriteRecord(const Name& owner, RrType type, RrClass cls, uint32_t ttl_s,
                                       const Rdata& rdata) {
  if (type == RrType::kOpt || !RdataMatches(rdata, type, cls)) return BuildError::kBadRdata;
  if (!WriteName(owner, true) || !Fits(kRecordFixedSize)) return BuildError::kNoSpace;
  PutU16(static_cast<uint16_t>(type));
  PutU16(static_cast<uint16_t>(cls));
  PutU32(ttl_s);
  const size_t rdlength_at = position_;
  position_ += 2;
  BuildError error = WriteRdata(rdata);
  if (error != BuildError::kOk) return error;
  size_t rdlength = position_ - rdlength_at - 2;
  if (rdlength > 0xFFFF) return BuildError::kBadRdata;
  buffer_[rdlength_at] = static_cast<uint8_t>(rdlength >> 8);
  buffer_[rdlength_at + 1] = static_cast<uint8_t>(rdlength);
  return BuildError::kOk;
}

BuildError BuildMessage(const Message& message, size_t max_size_bytes, std::vector<uint8_t>* out) {
  out->resize(std::min(max_size_bytes, kMaxMessageSize));
  MessageBuilder builder(*out, max_size_bytes);
  builder.header() = message.header;
  builder.header().rcode = message.rcode();
  if (message.edns.has_value()) {
    if (BuildError error = builder.SetEdns(message.edns->View()); error != BuildError::kOk) {
      return error;
    }
  }
  for (const Question& question : message.questions) {
    if (BuildError error = builder.AddQuestion(question.name, question.type, question.cls);
        error != BuildError::kOk) {
      return error;
    }
  }
  for (Section section : {Section::kAnswer, Section::kAuthority, Section::kAdditional}) {
    const std::vector<ResourceRecord>& records = message.section(section);
    for (size_t begin = 0; begin < records.size();) {
      size_t end = begin + 1;
      while (end < records.size() && records[end].owner == records[begin].owner &&
             records[end].type == records[begin].type && records[end].cls == records[begin].cls) {
        ++end;
      }
      BuildError error = builder.AddRrset(
          section, std::span<const ResourceRecord>(records.data() + begin, end - begin));
      if (error == BuildError::kBadRdata || error == BuildError::kBadOrder) return error;
      begin = end;
    }
  }
  size_t size = builder.Finish().size();
  out->resize(size);
  return BuildError::kOk;
}

}  // namespace kdns::dns

// Helpers for the codec's unit tests (header-only, not part of the library): terse
// constructors for names, messages and records, a raw packet writer for malformed input, and Catch2
// printers for the error enums.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/errors.h"
#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/dns/presentation.h"
#include "common/dns/query_testing.h"

namespace kdns::dns::testing {

inline Name N(std::string_view text) {
  Name name;
  REQUIRE(Name::FromText(text, &name) == ParseError::kOk);
  return name;
}

// The message `bytes` hold; fails the test when they do not parse.
inline Message Parse(std::span<const uint8_t> bytes) {
  Message message;
  REQUIRE(ParseMessage(bytes, &message) == ParseError::kOk);
  return message;
}

inline ResourceRecord RR(std::string_view text) {
  ResourceRecord record;
  INFO(text);
  REQUIRE(RecordFromText(text, &record) == ParseError::kOk);
  return record;
}

// Writes raw wire bytes, for messages no builder would produce.
class Packet {
 public:
  Packet& Header(uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar) {
    return U16(id).U16(flags).U16(qd).U16(an).U16(ns).U16(ar);
  }
  Packet& U8(uint8_t value) {
    bytes_.push_back(value);
    return *this;
  }
  Packet& U16(uint16_t value) { return U8(static_cast<uint8_t>(value >> 8)).U8(value & 0xFF); }
  Packet& U32(uint32_t value) {
    return U16(static_cast<uint16_t>(value >> 16)).U16(value & 0xFFFF);
  }
  Packet& Label(std::string_view label) {
    U8(static_cast<uint8_t>(label.size()));
    bytes_.insert(bytes_.end(), label.begin(), label.end());
    return *this;
  }
  // "a.b." as uncompressed labels and the root.
  Packet& Name(std::string_view text) {
    const dns::Name name = N(text);
    bytes_.insert(bytes_.end(), name.wire().begin(), name.wire().end());
    return *this;
  }
  Packet& Pointer(uint16_t offset) { return U16(static_cast<uint16_t>(0xC000 | offset)); }
  // Type, class, TTL and rdlength of a record.
  Packet& Fixed(uint16_t type, uint16_t cls, uint32_t ttl, uint16_t rdlength) {
    return U16(type).U16(cls).U32(ttl).U16(rdlength);
  }
  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace kdns::dns::testing

namespace Catch {
template <>
struct StringMaker<kdns::dns::ParseError> {
  static std::string convert(kdns::dns::ParseError error) {
    return std::string(kdns::dns::ToString(error));
  }
};
template <>
struct StringMaker<kdns::dns::BuildError> {
  static std::string convert(kdns::dns::BuildError error) {
    return std::string(kdns::dns::ToString(error));
  }
};
template <>
struct StringMaker<kdns::dns::Name> {
  static std::string convert(const kdns::dns::Name& name) { return name.ToText(); }
};
}  // namespace Catch

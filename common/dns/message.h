// A fully decoded DNS message: header, questions, the three record sections with typed
// rdata, and EDNS taken out of the additional section. Used for upstream replies, tests
// and tools; the server's query path uses ParseQuery (parser.h) instead, which allocates
// nothing. Plain values, no thread affinity.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/dns/edns.h"
#include "common/dns/errors.h"
#include "common/dns/header.h"
#include "common/dns/name.h"
#include "common/dns/rdata.h"
#include "common/dns/types.h"

namespace kdns::dns {

struct Question {
  Name name;
  RrType type = RrType::kA;
  RrClass cls = RrClass::kIn;
  friend bool operator==(const Question&, const Question&) = default;
};

struct ResourceRecord {
  Name owner;
  RrType type = RrType::kA;
  RrClass cls = RrClass::kIn;
  uint32_t ttl_s = 0;
  Rdata rdata;
  // Names compare case-insensitively (see Name).
  friend bool operator==(const ResourceRecord&, const ResourceRecord&) = default;
};

struct Message {
  // As parsed, counts included (arcount counts the OPT record). The builder ignores the
  // counts and writes what it wrote.
  Header header;
  std::vector<Question> questions;
  std::vector<ResourceRecord> answers;
  std::vector<ResourceRecord> authorities;
  std::vector<ResourceRecord> additionals;  // without the OPT record
  std::optional<Edns> edns;

  // The full 12-bit rcode: header bits plus the EDNS extension (RFC 6891 §6.1.3).
  Rcode rcode() const;
  const std::vector<ResourceRecord>& section(Section section) const;
  std::vector<ResourceRecord>& section(Section section);

  friend bool operator==(const Message&, const Message&) = default;
};

enum class TrailingData : uint8_t { kReject, kIgnore };

// Decodes a whole message. Every count must be matched by records (kCountMismatch when the
// message ends early, kTruncated when it ends inside a record); bytes after the last
// record are kTrailingGarbage unless `trailing` is kIgnore. On kOk, *end (when given) is
// the offset just after the last record: the message without what trailed it.
[[nodiscard]] ParseError ParseMessage(std::span<const uint8_t> packet, Message* message,
                                      TrailingData trailing = TrailingData::kReject,
                                      size_t* end = nullptr);

}  // namespace kdns::dns

// The one query builder of the tests, fuzz targets and benchmarks (header-only, not part of
// the library): a client's query as wire bytes, or as bytes with their parse, from a
// QuerySpec that names only what a test varies:
//
//   QuerySpec("www.example.com.").Type(RrType::kAaaa).Edns(1232).DnssecOk().Bytes()
//
// The defaults are what stubs send: ID 0x4242, a recursive standard query for `example.` A
// in class IN, without EDNS. It does not use Catch2, so fuzz targets and benchmarks can use
// it too; a spec that cannot be built (a name that does not parse) is a bug in the test,
// and aborts with a message.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/edns.h"
#include "common/dns/errors.h"
#include "common/dns/header.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/types.h"

namespace kdns::dns::testing {

// A client's query and its parse, which points into `bytes` (move it, do not copy it).
struct ParsedQuery {
  std::vector<uint8_t> bytes;
  Query query;
};

// What a client's query asks, and how; each setter returns the spec, to chain.
class QuerySpec {
 public:
  explicit QuerySpec(std::string_view name = "example.") : name_(name) {}

  QuerySpec& Type(RrType type) {
    type_ = type;
    return *this;
  }
  QuerySpec& Class(RrClass cls) {
    class_ = cls;
    return *this;
  }
  QuerySpec& Id(uint16_t id) {
    id_ = id;
    return *this;
  }
  // RD (set by default).
  QuerySpec& Recursion(bool desired) {
    rd_ = desired;
    return *this;
  }
  QuerySpec& Operation(Opcode opcode) {
    opcode_ = opcode;
    return *this;
  }
  // An OPT record (RFC 6891) advertising `payload_bytes`; the setters below add one too.
  QuerySpec& Edns(uint16_t payload_bytes = kDefaultUdpPayloadSize) {
    OptRecord().udp_payload_size = payload_bytes;
    return *this;
  }
  QuerySpec& DnssecOk() {
    OptRecord().dnssec_ok = true;
    return *this;
  }
  QuerySpec& EdnsVersion(uint8_t version) {
    OptRecord().version = version;
    return *this;
  }
  // Option TLVs as on the wire; they must outlive Bytes().
  QuerySpec& EdnsOptions(std::span<const uint8_t> options) {
    OptRecord().options = options;
    return *this;
  }

  bool has_edns() const { return edns_.has_value(); }

  // The query as it goes on the wire.
  std::vector<uint8_t> Bytes() const {
    std::vector<uint8_t> bytes(kMaxMessageSize);
    MessageBuilder builder(bytes);
    builder.header().id = id_;
    builder.header().rd = rd_;
    builder.header().opcode = opcode_;
    const std::optional<Name> name = Name::FromText(name_);
    if (!name || builder.AddQuestion(*name, type_, class_) != BuildError::kOk ||
        (edns_ && builder.SetEdns(*edns_) != BuildError::kOk)) {
      Fail("cannot build");
    }
    bytes.resize(builder.Finish().size());
    return bytes;
  }

  // The query and its parse.
  ParsedQuery Parsed() const {
    ParsedQuery parsed;
    parsed.bytes = Bytes();
    if (ParseQuery(parsed.bytes, &parsed.query) != ParseError::kOk) Fail("cannot parse");
    return parsed;
  }

 private:
  EdnsView& OptRecord() {
    if (!edns_) edns_.emplace();
    return *edns_;
  }

  [[noreturn]] void Fail(const char* what) const {
    std::fprintf(stderr, "QuerySpec: %s the query for \"%s\"\n", what, name_.c_str());
    std::abort();
  }

  std::string name_;
  RrType type_ = RrType::kA;
  RrClass class_ = RrClass::kIn;
  uint16_t id_ = 0x4242;
  bool rd_ = true;
  Opcode opcode_ = Opcode::kQuery;
  std::optional<EdnsView> edns_;
};

}  // namespace kdns::dns::testing

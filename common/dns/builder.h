// Writes DNS messages into a caller-provided buffer, with name compression and truncation
// at whole RRsets. No heap allocation: the compression table is a fixed array.
//
// Order of calls: header fields and SetEdns at any time before Finish; questions; then
// RRsets in section order (answer, authority, additional); Finish. An RRset is either one
// AddRecord/AddRrset call or BeginRrset, Add..., EndRrset. When an RRset does not fit:
//   - answer or authority: the whole set is rolled back, TC is set, and every later RRset
//     is dropped (kTruncated);
//   - additional: the set is rolled back and omitted without TC (RFC 2181 §9).
// Space for the OPT record is reserved as soon as SetEdns is called, so it always fits.
// The header counts written by Finish always match the records written.
//
// Compression (RFC 1035 §4.1.4) applies to owner names and to names inside the RFC 1035
// types NS, CNAME, SOA, PTR and MX only (RFC 3597 §4); SRV (RFC 2782) and DNAME targets are
// written in full. Suffixes match case-insensitively; literal labels keep their case.
//
// Example, a UDP answer to `query`:
//   MessageBuilder builder(buffer, query.edns ? query.edns->PayloadSize() : 512);
//   if (builder.StartResponse(query) != BuildError::kOk) ...;       // SERVFAIL path
//   if (query.edns) (void)builder.SetEdns(EdnsView{});              // advertise 1232
//   builder.BeginRrset(Section::kAnswer);
//   for (const auto& ip : ips) builder.Add(query.qname, RrType::kA, RrClass::kIn, 30, RdataA{ip});
//   (void)builder.EndRrset();    // kNoSpace means TC was set and the set dropped
//   std::span<const uint8_t> packet = builder.Finish();
//
// Not thread-safe; one builder per message.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/dns/edns.h"
#include "common/dns/errors.h"
#include "common/dns/header.h"
#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/rdata.h"
#include "common/dns/types.h"

namespace kdns::dns {

inline constexpr size_t kMaxUdpSizeWithoutEdns = 512;  // RFC 1035 §4.2.1
inline constexpr size_t kMaxMessageSize = 65535;       // TCP (RFC 1035 §4.2.2)

class MessageBuilder {
 public:
  static constexpr size_t kMaxCompressionEntries = 128;

  // Writes at most min(buffer.size(), max_size_bytes, 65535) bytes.
  MessageBuilder(std::span<uint8_t> buffer, size_t max_size_bytes);
  explicit MessageBuilder(std::span<uint8_t> buffer) : MessageBuilder(buffer, kMaxMessageSize) {}
  MessageBuilder(const MessageBuilder&) = delete;
  MessageBuilder& operator=(const MessageBuilder&) = delete;

  // Flags, ID and rcode. The counts are ignored: Finish writes the real ones. An rcode
  // above 15 needs EDNS: its upper bits go into the OPT record (RFC 6891 §6.1.3).
  Header& header() { return header_; }

  // Adds an OPT record at Finish and reserves its space now. The builder writes the
  // extended rcode from header().rcode, not from `edns`. The options must stay valid until
  // Finish. kNoSpace when what is already written leaves no room for it.
  [[nodiscard]] BuildError SetEdns(const EdnsView& edns);

  // Header of a response to `query` (ID, opcode, RD and CD copied, QR set) and its
  // question exactly as received (name case included).
  [[nodiscard]] BuildError StartResponse(const Query& query);
  // Questions come before any record (kBadOrder otherwise); kNoSpace if it does not fit.
  [[nodiscard]] BuildError AddQuestion(const Name& name, RrType type, RrClass cls);

  // One record as an RRset of its own / a whole RRset. Results as EndRrset.
  [[nodiscard]] BuildError AddRecord(Section section, const ResourceRecord& record);
  // One record already in wire form, as an RRset of its own (results as EndRrset): for
  // answers a server prepares once and patches per query. Its compression pointers must aim
  // at names already written; its names are not entered in the compression table, so no
  // later name points into it.
  [[nodiscard]] BuildError AddEncodedRecord(Section section, std::span<const uint8_t> record);
  [[nodiscard]] BuildError AddRrset(Section section, std::span<const ResourceRecord> records);

  // Streaming form of AddRrset: errors are remembered and reported by EndRrset.
  void BeginRrset(Section section);
  void Add(const Name& owner, RrType type, RrClass cls, uint32_t ttl_s, const Rdata& rdata);
  // The same as Add(owner, A or AAAA by the address's family, IN, ttl_s, RdataA/RdataAaaa),
  // written directly: the shape of most answers.
  void AddAddress(const Name& owner, uint32_t ttl_s, const IpAddress& address);
  void Add(const ResourceRecord& record) {
    Add(record.owner, record.type, record.cls, record.ttl_s, record.rdata);
  }
  // kOk: written. kNoSpace: rolled back (TC set unless additional). kTruncated: dropped
  // because an earlier set did not fit. kBadRdata: rdata that does not match its type or
  // cannot be encoded (rolled back, no TC). kBadOrder: misuse (sections out of order).
  [[nodiscard]] BuildError EndRrset();

  bool truncated() const { return truncated_; }
  // Bytes written so far, not counting the OPT record.
  size_t size() const { return position_; }
  uint16_t count(Section section) const { return counts_[static_cast<size_t>(section)]; }

  // Writes the header and the OPT record and returns the message (a view of the buffer).
  // An RRset still open is ended first.
  std::span<const uint8_t> Finish();

 private:
  struct CompressionEntry {
    uint16_t offset;
    uint8_t label_count;
  };

  size_t Limit() const { return limit_ - reserved_; }
  bool Fits(size_t size) const { return position_ <= Limit() && Limit() - position_ >= size; }
  void PutU16(uint16_t value);
  void PutU32(uint32_t value);
  void PutBytes(std::span<const uint8_t> bytes);
  // Finds an earlier name equal to `suffix` (which has `label_count` labels).
  std::optional<uint16_t> FindSuffix(std::span<const uint8_t> suffix, size_t label_count) const;
  bool WriteName(const Name& name, bool compress);
  // True when `name` equals the first question's name, ignoring case.
  bool IsQuestionName(const Name& name) const;
  bool WriteCharacterString(std::string_view text);
  BuildError WriteRdata(const Rdata& rdata);
  BuildError WriteRecord(const Name& owner, RrType type, RrClass cls, uint32_t ttl_s,
                         const Rdata& rdata);

  std::span<uint8_t> buffer_;
  size_t limit_;
  size_t position_;
  size_t reserved_ = 0;  // for the OPT record
  Header header_;
  std::array<uint16_t, 4> counts_{};
  Section section_ = Section::kQuestion;  // the latest section written to
  std::optional<EdnsView> edns_;
  bool truncated_ = false;
  bool order_error_ = false;

  bool in_rrset_ = false;
  Section rrset_section_ = Section::kAnswer;
  size_t rrset_position_ = 0;
  uint16_t rrset_count_ = 0;
  size_t rrset_entries_ = 0;
  BuildError rrset_error_ = BuildError::kOk;

  std::array<CompressionEntry, kMaxCompressionEntries> entries_;
  size_t entry_count_ = 0;
  // The first question's name, written at kHeaderSize with its suffixes first in the table:
  // an owner equal to it (the usual answer) is a pointer to kHeaderSize without a search.
  // Its wire length, 0 when there is none (or it is the root, which is never a pointer).
  size_t question_length_ = 0;
};

// Encodes `message` (counts from its vectors, rcode from Message::rcode(), EDNS if any)
// into `out`, truncating as MessageBuilder does; consecutive records with the same owner,
// type and class form an RRset. kBadRdata/kBadOrder/kNoSpace (question too big) fail.
[[nodiscard]] BuildError BuildMessage(const Message& message, size_t max_size_bytes,
                                      std::vector<uint8_t>* out);

}  // namespace kdns::dns

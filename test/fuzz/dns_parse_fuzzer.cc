// Fuzzes the DNS decoders with arbitrary bytes: the query fast path (and the
// client-address option in its EDNS), the full message parser, and the text form of
// whatever parses. Any record that parses must print as text
// that parses back to the same record (case included). --loadbalance's rotation
// (common/dns/loadbalance.h) runs on every input; on a message that parses it must leave one
// that parses to the same header, questions and records, each section's in some order. In
// ordinary builds this file is replayed over test/fuzz/corpus/dns_parse/.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/dns/client_address.h"
#include "common/dns/loadbalance.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/presentation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kdns::dns;
  std::span<const uint8_t> packet(data, size);

  Query query;
  if (ParseQuery(packet, &query) == ParseError::kOk) {
    std::string qname = query.qname.ToText();
    if (Name::FromText(qname) != query.qname) __builtin_trap();
    if (query.edns && query.edns->PayloadSize() < kMinUdpPayloadSize) __builtin_trap();
    // A client-address option that decodes writes back to the same client.
    ClientAddress client;
    if (query.edns && FindClientAddress(query.edns->options, kDefaultClientAddressOption,
                                        &client) == ClientAddressFound::kFound) {
      uint8_t option[kMaxClientAddressOptionBytes];
      const size_t written = WriteClientAddressOption(client, kDefaultClientAddressOption, option);
      ClientAddress again;
      if (FindClientAddress(std::span<const uint8_t>(option, written), kDefaultClientAddressOption,
                            &again) != ClientAddressFound::kFound ||
          !(again == client)) {
        __builtin_trap();
      }
    }
  }

  std::vector<uint8_t> rotated(packet.begin(), packet.end());
  const size_t rotations = RotateAddressRrsets(rotated, static_cast<uint32_t>(size));

  Message message;
  if (ParseMessage(packet, &message, TrailingData::kIgnore) != ParseError::kOk) return 0;
  Message after;
  if (ParseMessage(rotated, &after, TrailingData::kIgnore) != ParseError::kOk) __builtin_trap();
  if (!(after.header == message.header) || !(after.questions == message.questions)) {
    __builtin_trap();
  }
  for (Section section : {Section::kAnswer, Section::kAuthority, Section::kAdditional}) {
    // In lower case: the owners stay in place, so a set whose owners are written in other
    // cases pairs them with other addresses.
    auto lower = [](std::string text) {
      std::transform(text.begin(), text.end(), text.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return text;
    };
    std::vector<std::string> before_texts, after_texts;
    for (const ResourceRecord& record : message.section(section)) {
      before_texts.push_back(lower(RecordToText(record)));
    }
    for (const ResourceRecord& record : after.section(section)) {
      after_texts.push_back(lower(RecordToText(record)));
    }
    std::sort(before_texts.begin(), before_texts.end());
    std::sort(after_texts.begin(), after_texts.end());
    if (before_texts != after_texts) __builtin_trap();
  }
  if (rotations == 0 && rotated != std::vector<uint8_t>(packet.begin(), packet.end())) {
    __builtin_trap();
  }
  std::string text = MessageToText(message);
  for (Section section : {Section::kAnswer, Section::kAuthority, Section::kAdditional}) {
    for (const ResourceRecord& record : message.section(section)) {
      std::string line = RecordToText(record);
      ResourceRecord parsed;
      if (RecordFromText(line, &parsed) != ParseError::kOk) __builtin_trap();
      if (!(parsed == record) || RecordToText(parsed) != line) __builtin_trap();
    }
  }
  return 0;
}

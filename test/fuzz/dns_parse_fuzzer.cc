// Fuzzes the DNS decoders with arbitrary bytes: the query fast path (and the
// client-address option in its EDNS), the full message parser, and the text form of
// whatever parses. Any record that parses must print as text
// that parses back to the same record (case included). In ordinary builds this file is
// replayed over test/fuzz/corpus/dns_parse/.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/dns/client_address.h"
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

  Message message;
  if (ParseMessage(packet, &message, TrailingData::kIgnore) != ParseError::kOk) return 0;
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

#include "common/dns/notify.h"

#include <variant>

#include "common/dns/builder.h"

namespace kdns::dns {

std::span<const uint8_t> WriteNotify(uint16_t id, const Name& zone, const RdataSoa& soa,
                                     std::span<uint8_t> out) {
  MessageBuilder builder(out, kMaxUdpSizeWithoutEdns);
  builder.header().id = id;
  builder.header().opcode = Opcode::kNotify;
  builder.header().aa = true;
  if (builder.AddQuestion(zone, RrType::kSoa, RrClass::kIn) != BuildError::kOk) return {};
  // TTL 0: the record is a hint about now, not data to keep.
  if (builder.AddRecord(Section::kAnswer, ResourceRecord{zone, RrType::kSoa, RrClass::kIn, 0,
                                                         soa}) != BuildError::kOk) {
    return {};
  }
  return builder.Finish();
}

std::span<const uint8_t> WriteNotifyReply(const Query& notify, std::span<uint8_t> out) {
  MessageBuilder builder(out, kMaxUdpSizeWithoutEdns);
  if (builder.StartResponse(notify) != BuildError::kOk) return {};
  builder.header().aa = true;
  builder.header().rcode = Rcode::kNoError;
  return builder.Finish();
}

std::optional<uint32_t> SoaSerialOf(const Message& message, const Name& zone) {
  for (const ResourceRecord& record : message.answers) {
    if (record.type != RrType::kSoa || !(record.owner == zone)) continue;
    if (const auto* soa = std::get_if<RdataSoa>(&record.rdata)) return soa->serial;
  }
  return std::nullopt;
}

}  // namespace kdns::dns

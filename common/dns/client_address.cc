#include "common/dns/client_address.h"

#include <cstring>

namespace kdns::dns {
namespace {

// IANA address family numbers.
constexpr uint16_t kFamilyV4 = 1;
constexpr uint16_t kFamilyV6 = 2;
constexpr size_t kFixedDataBytes = 4;  // family and port

uint16_t Read16(std::span<const uint8_t> bytes, size_t at) {
  return static_cast<uint16_t>(bytes[at] << 8 | bytes[at + 1]);
}

void Write16(uint16_t value, uint8_t* at) {
  at[0] = static_cast<uint8_t>(value >> 8);
  at[1] = static_cast<uint8_t>(value);
}

// The data of one option; false when it is not a whole address of its family.
bool Decode(std::span<const uint8_t> data, ClientAddress* out) {
  if (data.size() < kFixedDataBytes) return false;
  const uint16_t family = Read16(data, 0);
  const std::span<const uint8_t> address = data.subspan(kFixedDataBytes);
  const size_t expected = family == kFamilyV4   ? IpAddress::kV4Size
                          : family == kFamilyV6 ? IpAddress::kV6Size
                                                : 0;
  if (expected == 0 || address.size() != expected) return false;
  out->address = *IpAddress::FromBytes(address);
  out->port = Read16(data, 2);
  return true;
}

}  // namespace

ClientAddressFound FindClientAddress(std::span<const uint8_t> options, uint16_t code,
                                     ClientAddress* out) {
  ClientAddressFound found = ClientAddressFound::kAbsent;
  for (size_t at = 0; options.size() - at >= 4;) {
    const uint16_t option = Read16(options, at);
    const size_t length = Read16(options, at + 2);
    if (options.size() - at - 4 < length) break;
    if (option == code) {
      // Twice is malformed: which one would be the client?
      if (found != ClientAddressFound::kAbsent) return ClientAddressFound::kMalformed;
      if (!Decode(options.subspan(at + 4, length), out)) return ClientAddressFound::kMalformed;
      found = ClientAddressFound::kFound;
    }
    at += 4 + length;
  }
  return found;
}

size_t WriteClientAddressOption(const ClientAddress& client, uint16_t code,
                                std::span<uint8_t> out) {
  const std::span<const uint8_t> address = client.address.bytes();
  const size_t data_bytes = kFixedDataBytes + address.size();
  if (out.size() < 4 + data_bytes) return 0;
  uint8_t* at = out.data();
  Write16(code, at);
  Write16(static_cast<uint16_t>(data_bytes), at + 2);
  Write16(client.address.is_v4() ? kFamilyV4 : kFamilyV6, at + 4);
  Write16(client.port, at + 6);
  std::memcpy(at + 8, address.data(), address.size());
  return 4 + data_bytes;
}

}  // namespace kdns::dns

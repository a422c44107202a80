#include "common/dns/client_address.h"

#include <array>
#include <catch2/catch.hpp>
#include <vector>

namespace kdns::dns {
namespace {

ClientAddress Client(const char* address, uint16_t port) {
  return ClientAddress{*IpAddress::Parse(address), port};
}

std::vector<uint8_t> Option(const ClientAddress& client, uint16_t code) {
  std::array<uint8_t, kMaxClientAddressOptionBytes> buffer{};
  const size_t size = WriteClientAddressOption(client, code, buffer);
  return {buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(size)};
}

TEST_CASE("a client address option round-trips for IPv4 and IPv6", "[dns][client_address]") {
  const ClientAddress client = GENERATE(Client("10.1.2.3", 41000), Client("fd00::17", 53));
  const std::vector<uint8_t> option = Option(client, kDefaultClientAddressOption);
  CHECK(option.size() == (client.address.is_v4() ? 12u : 24u));
  ClientAddress found;
  REQUIRE(FindClientAddress(option, kDefaultClientAddressOption, &found) ==
          ClientAddressFound::kFound);
  CHECK(found == client);
}

TEST_CASE("a client address option is written as family, port and the whole address",
          "[dns][client_address]") {
  CHECK(Option(Client("10.1.2.3", 0x1234), 65432) ==
        std::vector<uint8_t>{0xFF, 0x98, 0, 8, 0, 1, 0x12, 0x34, 10, 1, 2, 3});
}

TEST_CASE("the client address is found among other options, by its code only",
          "[dns][client_address]") {
  std::vector<uint8_t> options = {0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8};  // a COOKIE
  const std::vector<uint8_t> option = Option(Client("10.0.0.9", 7), 65001);
  options.insert(options.end(), option.begin(), option.end());
  ClientAddress found;
  CHECK(FindClientAddress(options, 65001, &found) == ClientAddressFound::kFound);
  CHECK(found == Client("10.0.0.9", 7));
  CHECK(FindClientAddress(options, kDefaultClientAddressOption, &found) ==
        ClientAddressFound::kAbsent);
  CHECK(FindClientAddress({}, kDefaultClientAddressOption, &found) == ClientAddressFound::kAbsent);
}

TEST_CASE("a client address option that is not one whole address is malformed",
          "[dns][client_address]") {
  const std::vector<uint8_t> option = GENERATE(
      std::vector<uint8_t>{0xFF, 0x98, 0, 0},                                // no data
      std::vector<uint8_t>{0xFF, 0x98, 0, 7, 0, 1, 0, 53, 10, 1, 2},         // 3 address bytes
      std::vector<uint8_t>{0xFF, 0x98, 0, 8, 0, 2, 0, 53, 10, 1, 2, 3},      // v6 family, 4 bytes
      std::vector<uint8_t>{0xFF, 0x98, 0, 8, 0, 3, 0, 53, 10, 1, 2, 3},      // unknown family
      std::vector<uint8_t>{0xFF, 0x98, 0, 9, 0, 1, 0, 53, 10, 1, 2, 3, 4});  // a byte too many
  ClientAddress found;
  CHECK(FindClientAddress(option, kDefaultClientAddressOption, &found) ==
        ClientAddressFound::kMalformed);
}

TEST_CASE("a client address option given twice is malformed", "[dns][client_address]") {
  std::vector<uint8_t> options = Option(Client("10.0.0.1", 1), kDefaultClientAddressOption);
  const std::vector<uint8_t> again = Option(Client("10.0.0.2", 2), kDefaultClientAddressOption);
  options.insert(options.end(), again.begin(), again.end());
  ClientAddress found;
  CHECK(FindClientAddress(options, kDefaultClientAddressOption, &found) ==
        ClientAddressFound::kMalformed);
}

TEST_CASE("writing a client address option needs room for all of it", "[dns][client_address]") {
  std::array<uint8_t, 11> small{};
  CHECK(WriteClientAddressOption(Client("10.0.0.1", 1), kDefaultClientAddressOption, small) == 0);
}

}  // namespace
}  // namespace kdns::dns

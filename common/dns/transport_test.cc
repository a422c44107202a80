#include "common/dns/transport.h"

#include <catch2/catch.hpp>
#include <string>

namespace kdns::dns {
namespace {

TEST_CASE("TransportName names both transports", "[dns]") {
  CHECK(std::string(TransportName(Transport::kUdp)) == "udp");
  CHECK(std::string(TransportName(Transport::kTcp)) == "tcp");
}

}  // namespace
}  // namespace kdns::dns

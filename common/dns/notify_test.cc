#include "common/dns/notify.h"

#include <catch2/catch.hpp>
#include <vector>

#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;

RdataSoa SoaWithSerial(uint32_t serial) {
  RdataSoa soa;
  soa.mname = N("ns.dns.cluster.local.");
  soa.rname = N("hostmaster.cluster.local.");
  soa.serial = serial;
  return soa;
}

TEST_CASE("a NOTIFY names its zone in the question and carries the new serial", "[dns][notify]") {
  std::vector<uint8_t> buffer(512);
  auto bytes = WriteNotify(0x1234, N("cluster.local."), SoaWithSerial(4000000007), buffer);
  REQUIRE_FALSE(bytes.empty());
  Message message;
  REQUIRE(ParseMessage(bytes, &message) == ParseError::kOk);
  CHECK(message.header.id == 0x1234);
  CHECK(message.header.opcode == Opcode::kNotify);
  CHECK(message.header.aa);
  CHECK_FALSE(message.header.qr);
  REQUIRE(message.questions.size() == 1);
  CHECK(message.questions[0].name == N("cluster.local."));
  CHECK(message.questions[0].type == RrType::kSoa);
  CHECK(SoaSerialOf(message, N("Cluster.Local.")) == 4000000007u);
  CHECK_FALSE(SoaSerialOf(message, N("other.local.")).has_value());

  SECTION("and parses as a query, whose reply is NOERROR with QR and AA") {
    Query query;
    REQUIRE(ParseQuery(bytes, &query) == ParseError::kOk);
    CHECK(query.header.opcode == Opcode::kNotify);
    std::vector<uint8_t> out(512);
    auto reply_bytes = WriteNotifyReply(query, out);
    Message reply;
    REQUIRE(ParseMessage(reply_bytes, &reply) == ParseError::kOk);
    CHECK(reply.header.id == 0x1234);
    CHECK(reply.header.qr);
    CHECK(reply.header.aa);
    CHECK(reply.header.opcode == Opcode::kNotify);
    CHECK(reply.rcode() == Rcode::kNoError);
    REQUIRE(reply.questions.size() == 1);
    CHECK(reply.questions[0].name == N("cluster.local."));
    CHECK(reply.answers.empty());
  }
}

TEST_CASE("a NOTIFY that does not fit is not written", "[dns][notify]") {
  std::vector<uint8_t> tiny(20);
  CHECK(WriteNotify(1, N("cluster.local."), SoaWithSerial(1), tiny).empty());
}

}  // namespace
}  // namespace kdns::dns

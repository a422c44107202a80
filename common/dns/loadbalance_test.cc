#include "common/dns/loadbalance.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;
using testing::Parse;
using testing::RR;

// A reply to `qname`/`qtype` with the given records, as the builder writes it.
std::vector<uint8_t> Reply(std::string_view qname, RrType qtype,
                           const std::vector<std::string>& answers,
                           const std::vector<std::string>& additionals = {},
                           Rcode rcode = Rcode::kNoError) {
  Message message;
  message.header.qr = true;
  message.header.rcode = rcode;
  message.questions.push_back({N(qname), qtype, RrClass::kIn});
  for (const auto& text : answers) message.answers.push_back(RR(text));
  for (const auto& text : additionals) message.additionals.push_back(RR(text));
  std::vector<uint8_t> bytes;
  REQUIRE(BuildMessage(message, kMaxMessageSize, &bytes) == BuildError::kOk);
  return bytes;
}

std::vector<std::string> Texts(const std::vector<ResourceRecord>& records) {
  std::vector<std::string> texts;
  for (const auto& record : records) texts.push_back(RecordToText(record));
  return texts;
}

std::vector<std::string> Rotated(std::vector<std::string> texts, size_t begin, size_t end,
                                 size_t by) {
  std::rotate(texts.begin() + begin, texts.begin() + begin + by % (end - begin),
              texts.begin() + end);
  return texts;
}

const std::vector<std::string> kChain = {
    "www.example. 30 IN CNAME a.example.", "a.example. 30 IN CNAME b.example.",
    "b.example. 30 IN A 10.0.0.1",         "b.example. 30 IN A 10.0.0.2",
    "b.example. 30 IN A 10.0.0.3",         "b.example. 30 IN AAAA 2001:db8::1",
    "b.example. 30 IN AAAA 2001:db8::2",   "b.example. 30 IN TXT \"last\""};
const std::vector<std::string> kGlue = {"ns.example. 30 IN A 192.0.2.1",
                                        "ns.example. 30 IN A 192.0.2.2"};

TEST_CASE("Round robin rotates each address RRset and moves nothing else", "[dns][loadbalance]") {
  const uint32_t turn = GENERATE(range(0u, 7u));
  std::vector<uint8_t> bytes = Reply("www.example.", RrType::kA, kChain, kGlue);
  const Message before = Parse(bytes);

  CHECK(RotateAddressRrsets(bytes, turn) == 3);

  const Message after = Parse(bytes);
  // CNAMEs first in chain order, the A set then the AAAA set rotated in place, the TXT last;
  // the glue rotated in its own section.
  const std::vector<std::string> answers = Texts(before.answers);
  CHECK(Texts(after.answers) == Rotated(Rotated(answers, 2, 5, turn), 5, 7, turn));
  CHECK(Texts(after.additionals) == Rotated(Texts(before.additionals), 0, 2, turn));
  CHECK(after.header == before.header);
  CHECK(after.questions == before.questions);
  if (turn % 6 == 0) CHECK(after == before);
}

TEST_CASE("Round robin puts every address first in turn", "[dns][loadbalance]") {
  const std::vector<uint8_t> original =
      Reply("h.ns.svc.cluster.local.", RrType::kA,
            {"h.ns.svc.cluster.local. 30 IN A 10.1.0.1", "h.ns.svc.cluster.local. 30 IN A 10.1.0.2",
             "h.ns.svc.cluster.local. 30 IN A 10.1.0.3"});
  std::vector<std::string> firsts;
  for (uint32_t turn = 0; turn < 3; ++turn) {
    std::vector<uint8_t> bytes = original;
    REQUIRE(RotateAddressRrsets(bytes, turn) == 1);
    firsts.push_back(RecordToText(Parse(bytes).answers.front()));
  }
  CHECK(firsts == std::vector<std::string>{"h.ns.svc.cluster.local. 30 IN A 10.1.0.1",
                                           "h.ns.svc.cluster.local. 30 IN A 10.1.0.2",
                                           "h.ns.svc.cluster.local. 30 IN A 10.1.0.3"});
}

TEST_CASE("Round robin rotates an RRset whose owners are written differently",
          "[dns][loadbalance]") {
  // The first owner in full, the second a pointer to it: only the records' tails move.
  testing::Packet packet;
  packet.Header(1, 0x8180, 1, 2, 0, 0).Name("a.example.").U16(1).U16(1);
  packet.Name("a.example.").Fixed(1, 1, 30, 4).U32(0x0A000001);
  packet.Pointer(12).Fixed(1, 1, 30, 4).U32(0x0A000002);
  std::vector<uint8_t> bytes = packet.bytes();
  CHECK(RotateAddressRrsets(bytes, 1) == 1);
  CHECK(Texts(Parse(bytes).answers) ==
        std::vector<std::string>{"a.example. 30 IN A 10.0.0.2", "a.example. 30 IN A 10.0.0.1"});
  CHECK(std::equal(bytes.begin(), bytes.begin() + 42, packet.bytes().begin()));  // owners stay
}

TEST_CASE("Round robin reads owners by where they point, and by name when that differs",
          "[dns][loadbalance]") {
  // Owner 1 in full (offset 27), owner 2 a pointer to it, owner 3 a pointer to the question,
  // in other case; then c.example., a pointer to a name of its own: another RRset.
  testing::Packet packet;
  packet.Header(1, 0x8180, 1, 5, 0, 0).Name("a.example.").U16(1).U16(1);
  packet.Name("A.EXAMPLE.").Fixed(1, 1, 30, 4).U32(0x0A000001);
  packet.Pointer(27).Fixed(1, 1, 30, 4).U32(0x0A000002);
  packet.Pointer(12).Fixed(1, 1, 30, 4).U32(0x0A000003);
  const size_t c_owner = packet.bytes().size();
  packet.Name("c.example.").Fixed(1, 1, 30, 4).U32(0x0A000004);
  packet.Pointer(static_cast<uint16_t>(c_owner)).Fixed(1, 1, 30, 4).U32(0x0A000005);
  std::vector<uint8_t> bytes = packet.bytes();
  CHECK(RotateAddressRrsets(bytes, 1) == 2);
  CHECK(Texts(Parse(bytes).answers) ==
        std::vector<std::string>{"A.EXAMPLE. 30 IN A 10.0.0.2", "A.EXAMPLE. 30 IN A 10.0.0.3",
                                 "a.example. 30 IN A 10.0.0.1", "c.example. 30 IN A 10.0.0.5",
                                 "c.example. 30 IN A 10.0.0.4"});
}

TEST_CASE("Round robin keeps RRsets of different owners apart", "[dns][loadbalance]") {
  std::vector<uint8_t> bytes =
      Reply("a.example.", RrType::kA,
            {"a.example. 30 IN A 10.0.0.1", "a.example. 30 IN A 10.0.0.2",
             "b.example. 30 IN A 10.0.0.3", "b.example. 30 IN A 10.0.0.4"});
  CHECK(RotateAddressRrsets(bytes, 1) == 2);
  CHECK(Texts(Parse(bytes).answers) ==
        std::vector<std::string>{"a.example. 30 IN A 10.0.0.2", "a.example. 30 IN A 10.0.0.1",
                                 "b.example. 30 IN A 10.0.0.4", "b.example. 30 IN A 10.0.0.3"});
}

TEST_CASE("Round robin leaves alone what it must not or cannot rotate", "[dns][loadbalance]") {
  const std::vector<std::string> two = {"a.example. 30 IN A 10.0.0.1",
                                        "a.example. 30 IN A 10.0.0.2"};
  SECTION("a reply that is not NOERROR") {
    std::vector<uint8_t> bytes = Reply("a.example.", RrType::kA, two, {}, Rcode::kServFail);
    const std::vector<uint8_t> before = bytes;
    CHECK(RotateAddressRrsets(bytes, 1) == 0);
    CHECK(bytes == before);
  }
  SECTION("a zone transfer") {
    std::vector<uint8_t> bytes = Reply("a.example.", RrType::kAxfr, two);
    const std::vector<uint8_t> before = bytes;
    CHECK(RotateAddressRrsets(bytes, 1) == 0);
    CHECK(bytes == before);
  }
  SECTION("one record in each section") {
    std::vector<uint8_t> bytes = Reply("a.example.", RrType::kA, {two[0]}, {kGlue[0]});
    const std::vector<uint8_t> before = bytes;
    CHECK(RotateAddressRrsets(bytes, 1) == 0);
    CHECK(bytes == before);
  }
  SECTION("a single address") {
    std::vector<uint8_t> bytes = Reply("a.example.", RrType::kA, {two[0]});
    const std::vector<uint8_t> before = bytes;
    CHECK(RotateAddressRrsets(bytes, 1) == 0);
    CHECK(bytes == before);
  }
  SECTION("a message cut short: the RRsets before the cut only") {
    std::vector<uint8_t> bytes = Reply("a.example.", RrType::kA, two, kGlue);
    bytes.resize(bytes.size() - 3);
    CHECK(RotateAddressRrsets(bytes, 1) == 1);
  }
  SECTION("a header cut short") {
    std::vector<uint8_t> bytes = {0, 1, 0x81};
    CHECK(RotateAddressRrsets(bytes, 1) == 0);
  }
}

TEST_CASE("Load balance modes parse from their flag spelling", "[dns][loadbalance]") {
  LoadBalance mode = LoadBalance::kOff;
  CHECK(ParseLoadBalance("round_robin", &mode));
  CHECK(mode == LoadBalance::kRoundRobin);
  CHECK(LoadBalanceName(mode) == "round_robin");
  CHECK(ParseLoadBalance("off", &mode));
  CHECK(mode == LoadBalance::kOff);
  CHECK(LoadBalanceName(mode) == "off");
  CHECK_FALSE(ParseLoadBalance("random", &mode));
  CHECK_FALSE(ParseLoadBalance("", &mode));
}

TEST_CASE("Each thread has its own round robin turn", "[dns][loadbalance]") {
  const uint32_t first = NextRoundRobinTurn();
  CHECK(NextRoundRobinTurn() == first + 1);
}

}  // namespace
}  // namespace kdns::dns

#include "common/server/forward_reply.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/server/forward_reply_testing.h"

namespace kdns::server {
namespace {

using dns::testing::N;
using dns::testing::RR;

ClientQuery Client(const char* name, dns::RrType type, std::optional<uint16_t> edns_payload,
                   dns::Transport transport = dns::Transport::kUdp) {
  dns::testing::QuerySpec spec(name);
  spec.Type(type).Id(0xbeef);
  if (edns_payload) spec.Edns(*edns_payload);
  const std::vector<uint8_t> bytes = spec.Bytes();
  Admission admission;
  Admit(bytes, transport, AdmissionPolicy{}, &admission);
  REQUIRE(admission.admitted());
  return ClientQuery::From(admission);
}

dns::Message Parse(std::span<const uint8_t> bytes) {
  dns::Message message;
  REQUIRE(dns::ParseMessage(bytes, &message) == dns::ParseError::kOk);
  return message;
}

// The answer as kubedns writes it (Truncation::kWholeRRsets); empty when it cannot.
std::vector<uint8_t> WholeRRsets(const upstream::Result& result, const ClientQuery& client) {
  std::vector<uint8_t> buffer(dns::kMaxMessageSize);
  std::vector<uint8_t> scratch;
  const Fitted fitted = FitReply(ReplyToFit::From(result), client.query(), client.limit_bytes,
                                 Truncation::kWholeRRsets, buffer, &scratch);
  return {fitted.bytes.begin(), fitted.bytes.end()};
}

std::vector<dns::ResourceRecord> ManyA(const char* owner, int count) {
  std::vector<dns::ResourceRecord> records;
  records.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    records.push_back(RR(std::string(owner) + " 60 IN A 198.51.100." + std::to_string(i)));
  }
  return records;
}

}  // namespace

TEST_CASE("a forwarded reply gets the client's ID and question case", "[server][forward]") {
  ClientQuery client = Client("WwW.Example.COM.", dns::RrType::kA, 1232);
  upstream::Result result = testing::UpstreamReply(
      "www.example.com.", dns::RrType::kA, {RR("www.example.com. 60 IN A 192.0.2.1")}, true);
  std::vector<uint8_t> out = WholeRRsets(result, client);
  REQUIRE_FALSE(out.empty());
  CHECK(out.size() == result.reply.size());  // the bytes as received, rewritten in place
  dns::Message reply = Parse(out);
  CHECK(reply.header.id == 0xbeef);
  CHECK(reply.questions[0].name.IdenticalTo(N("WwW.Example.COM.")));
  CHECK(reply.answers.size() == 1);
  CHECK(reply.edns.has_value());
}

TEST_CASE("a forwarded reply carries OPT only when the client sent it", "[server][forward]") {
  SECTION("the upstream's OPT is removed for a client without EDNS") {
    ClientQuery client = Client("www.example.com.", dns::RrType::kA, std::nullopt);
    std::vector<uint8_t> out =
        WholeRRsets(testing::UpstreamReply("www.example.com.", dns::RrType::kA,
                                           {RR("www.example.com. 60 IN A 192.0.2.1")}, true),
                    client);
    REQUIRE_FALSE(out.empty());
    dns::Message reply = Parse(out);
    CHECK_FALSE(reply.edns.has_value());
    CHECK(reply.header.id == 0xbeef);
    CHECK(reply.answers.size() == 1);
  }
  SECTION("ours is added for a client with EDNS when the upstream sent none") {
    ClientQuery client = Client("www.example.com.", dns::RrType::kA, 4096);
    std::vector<uint8_t> out =
        WholeRRsets(testing::UpstreamReply("www.example.com.", dns::RrType::kA,
                                           {RR("www.example.com. 60 IN A 192.0.2.1")}, false),
                    client);
    REQUIRE_FALSE(out.empty());
    dns::Message reply = Parse(out);
    REQUIRE(reply.edns.has_value());
    CHECK(reply.edns->udp_payload_size == 1232);
  }
}

TEST_CASE("a forwarded reply too big for the client's UDP buffer is cut at an RRset with TC",
          "[server][forward]") {
  std::vector<dns::ResourceRecord> records = {RR("big.example.com. 60 IN CNAME pool.example.com.")};
  for (auto& record : ManyA("pool.example.com.", 100)) records.push_back(record);
  upstream::Result result =
      testing::UpstreamReply("big.example.com.", dns::RrType::kA, records, true);
  REQUIRE(result.reply.size() > 1232);
  struct Case {
    std::optional<uint16_t> payload;
    dns::Transport transport;
    bool truncated;
  };
  auto c = GENERATE(Case{std::nullopt, dns::Transport::kUdp, true},  // 512
                    Case{4096, dns::Transport::kUdp, true},          // capped at 1232
                    Case{std::nullopt, dns::Transport::kTcp, false});
  ClientQuery client = Client("BIG.example.com.", dns::RrType::kA, c.payload, c.transport);
  std::vector<uint8_t> out = WholeRRsets(result, client);
  REQUIRE_FALSE(out.empty());
  CHECK(out.size() <= client.limit_bytes);
  dns::Message reply = Parse(out);
  CHECK(reply.header.tc == c.truncated);
  CHECK(reply.header.id == 0xbeef);
  CHECK(reply.questions[0].name.IdenticalTo(N("BIG.example.com.")));
  if (c.truncated) {
    REQUIRE(reply.answers.size() == 1);  // the CNAME fits, the A RRset does not
    CHECK(reply.answers[0].owner.IdenticalTo(N("BIG.example.com.")));
  } else {
    CHECK(reply.answers.size() == 101);
  }
}

TEST_CASE("SERVFAIL for a kept client echoes the question, sets RA and OPT as asked",
          "[server][forward]") {
  std::vector<uint8_t> buffer(512);
  for (bool edns : {false, true}) {
    ClientQuery client = Client("Www.Example.com.", dns::RrType::kAaaa,
                                edns ? std::optional<uint16_t>(1232) : std::nullopt);
    dns::Message reply =
        Parse(WriteEmptyResponse(client.query(), dns::Rcode::kServFail, /*aa=*/false, buffer));
    CHECK(reply.rcode() == dns::Rcode::kServFail);
    CHECK(reply.header.id == 0xbeef);
    CHECK(reply.header.qr);
    CHECK(reply.header.ra);
    CHECK(reply.header.rd);
    CHECK_FALSE(reply.header.aa);
    REQUIRE(reply.questions.size() == 1);
    CHECK(reply.questions[0].name.IdenticalTo(N("Www.Example.com.")));
    CHECK(reply.questions[0].type == dns::RrType::kAaaa);
    CHECK(reply.edns.has_value() == edns);
  }
}

// The bytes kubedns sends for forwarded replies, as they were before the two servers shared
// FitReply: the upstream's bytes (its flags, TTLs and OPT) when they fit and the EDNS matches;
// otherwise re-encoded, with our OPT (the upstream's DO bit) or none, and cut at a whole
// RRset with TC (only the CNAME fits 512 or 1232 bytes of the big answer).
TEST_CASE("kubedns's forwarded replies keep their bytes (ID, case, EDNS, whole-RRset cut, TCP)",
          "[server][forward]") {
  using namespace testing;
  struct Pin {
    const char* what;
    std::optional<uint16_t> payload;
    bool dnssec_ok;
    dns::Transport transport;
    bool big;
    bool upstream_edns;
    size_t size;
    uint64_t fnv;
    const char* hex;  // spelt out when short
  };
  const Pin pin = GENERATE(
      Pin{"fits, both EDNS: the upstream's OPT passes", 1232, false, dns::Transport::kUdp, false,
          true, 66, 0x77e4fd9c06a570b1,
          "beef8580000100010000000103577757074578616d706c6503434f4d0000010001c00c0001000100"
          "00003c0004c00002010000291000000080000006000300026e73"},
      Pin{"fits, no client EDNS: re-encoded without OPT", std::nullopt, false, dns::Transport::kUdp,
          false, true, 49, 0x2b707b87d5be28cd,
          "beef8580000100010000000003577757074578616d706c6503434f4d0000010001c00c0001000100"
          "00003c0004c0000201"},
      Pin{"fits, no upstream EDNS: re-encoded with ours", 4096, true, dns::Transport::kUdp, false,
          false, 60, 0xeceaeb62af8df133,
          "beef8580000100010000000103577757074578616d706c6503434f4d0000010001c00c0001000100"
          "00003c0004c000020100002904d0000000000000"},
      Pin{"fits, neither EDNS", std::nullopt, false, dns::Transport::kUdp, false, false, 49,
          0x2b707b87d5be28cd, nullptr},
      Pin{"too big for 512 over UDP: the CNAME, TC", std::nullopt, false, dns::Transport::kUdp,
          true, true, 52, 0x5e328fbc373f440a,
          "beef8780000100010000000003424947076578616d706c6503636f6d0000010001c00c0005000100"
          "00003c000704706f6f6cc010"},
      Pin{"too big for 1232 over UDP with EDNS: the CNAME, TC, our OPT", 4096, true,
          dns::Transport::kUdp, true, true, 63, 0xf9b9a4c3e949a238,
          "beef8780000100010000000103424947076578616d706c6503636f6d0000010001c00c0005000100"
          "00003c000704706f6f6cc01000002904d0000080000000"},
      Pin{"over TCP without EDNS: whole, re-encoded", std::nullopt, false, dns::Transport::kTcp,
          true, true, 1652, 0x3e4f4cb26ae83670, nullptr},
      Pin{"over TCP with EDNS: whole, as received", 4096, false, dns::Transport::kTcp, true, true,
          1669, 0xd3d67bd48d2a0840, nullptr});
  INFO(pin.what);
  const std::vector<uint8_t> query =
      PinQuery(pin.big ? "BIG.example.com." : "WwW.Example.COM.", pin.payload, pin.dnssec_ok);
  const ClientQuery client = ClientQuery::From(PinAdmit(query, pin.transport));
  const upstream::Result result = PinUpstream(pin.big ? "big.example.com." : "www.example.com.",
                                              pin.big ? PinBig() : PinSmall(), pin.upstream_edns);
  const std::vector<uint8_t> out = WholeRRsets(result, client);
  CHECK(out.size() == pin.size);
  CHECK(Fnv1a(out) == pin.fnv);
  if (pin.hex != nullptr) CHECK(Hex(out) == pin.hex);
}

TEST_CASE("Truncation::kEmpty sends the header and question with TC, and our OPT if asked",
          "[server][forward]") {
  using namespace testing;
  // A reply with no OPT record, as a cache keeps it.
  const upstream::Result result = PinUpstream("big.example.com.", PinBig(), false);
  ReplyToFit reply;
  reply.wire = result.reply;
  reply.question_end = dns::kHeaderSize + N("big.example.com.").wire().size() + 4;
  reply.dnssec_ok = true;
  std::vector<uint8_t> buffer(dns::kMaxMessageSize);
  auto fit = [&](std::optional<uint16_t> payload, dns::Transport transport) {
    const std::vector<uint8_t> query = PinQuery("BIG.example.com.", payload);
    const Admission admission = PinAdmit(query, transport);
    return FitReply(reply, admission.query, admission.reply_limit_bytes, Truncation::kEmpty, buffer,
                    nullptr);
  };
  SECTION("over UDP without EDNS (512 bytes)") {
    const Fitted fitted = fit(std::nullopt, dns::Transport::kUdp);
    CHECK(fitted.truncated);
    CHECK(Hex(fitted.bytes) ==
          "beef8780000100000000000003424947076578616d706c6503636f6d0000010001");
  }
  SECTION("over UDP with EDNS (1232 bytes)") {
    const Fitted fitted = fit(4096, dns::Transport::kUdp);
    CHECK(fitted.truncated);
    CHECK(Hex(fitted.bytes) ==
          "beef8780000100000000000103424947076578616d706c6503636f6d000001000100002904d00000"
          "80000000");
  }
  SECTION("over TCP: whole, the client's ID and case, our OPT appended") {
    const Fitted fitted = fit(4096, dns::Transport::kTcp);
    CHECK_FALSE(fitted.truncated);
    REQUIRE(fitted.bytes.size() == result.reply.size() + dns::kOptFixedSize);
    dns::Message message = Parse(fitted.bytes);
    CHECK(message.header.id == 0xbeef);
    CHECK(message.questions[0].name.IdenticalTo(N("BIG.example.com.")));
    CHECK(message.answers.size() == 101);
    REQUIRE(message.edns.has_value());
    CHECK(message.edns->udp_payload_size == dns::kDefaultUdpPayloadSize);
    CHECK(message.edns->dnssec_ok);
    CHECK(message.edns->options.empty());
  }
  SECTION("a name known to be the client's is written as is; a question of another length is not") {
    reply.echo = QuestionEcho::kKnownSame;
    const Fitted fitted = fit(std::nullopt, dns::Transport::kUdp);
    CHECK(Hex(fitted.bytes) ==
          "beef8780000100000000000003424947076578616d706c6503636f6d0000010001");
    reply.question_end += 1;
    CHECK(fit(std::nullopt, dns::Transport::kUdp).bytes.empty());
  }
  SECTION("not even the question fits: nothing") {
    const std::vector<uint8_t> query = PinQuery("BIG.example.com.", std::nullopt);
    const Admission admission = PinAdmit(query, dns::Transport::kUdp);
    CHECK(FitReply(reply, admission.query, reply.question_end - 1, Truncation::kEmpty, buffer,
                   nullptr)
              .bytes.empty());
  }
}

}  // namespace kdns::server

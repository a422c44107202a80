#include "common/server/forward_reply.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/testing.h"

namespace kdns::server {
namespace {

using dns::testing::N;
using dns::testing::RR;

ClientQuery Client(const char* name, dns::RrType type, std::optional<uint16_t> edns_payload,
                   dns::Transport transport = dns::Transport::kUdp) {
  std::vector<uint8_t> buffer(512);
  dns::MessageBuilder builder(buffer);
  builder.header().id = 0xbeef;
  builder.header().rd = true;
  REQUIRE(builder.AddQuestion(N(name), type, dns::RrClass::kIn) == dns::BuildError::kOk);
  if (edns_payload) {
    dns::EdnsView edns;
    edns.udp_payload_size = *edns_payload;
    REQUIRE(builder.SetEdns(edns) == dns::BuildError::kOk);
  }
  auto bytes = builder.Finish();
  Admission admission;
  Admit(bytes, transport, AdmissionPolicy{}, &admission);
  REQUIRE(admission.admitted());
  return ClientQuery::From(admission);
}

// An upstream's reply to `name` (as the upstream spelt it), with `records` as its answers.
upstream::Result Upstream(const char* name, dns::RrType type,
                          std::vector<dns::ResourceRecord> records, bool edns,
                          dns::Rcode rcode = dns::Rcode::kNoError,
                          std::vector<dns::ResourceRecord> authorities = {}) {
  upstream::Result result;
  result.outcome = upstream::Outcome::kAnswer;
  dns::Message& m = result.message;
  m.header.id = 0x1111;
  m.header.qr = true;
  m.header.rd = true;
  m.header.ra = true;
  m.header.rcode = rcode;
  m.questions.push_back({N(name), type, dns::RrClass::kIn});
  m.answers = std::move(records);
  m.authorities = std::move(authorities);
  if (edns) m.edns = dns::Edns{};
  REQUIRE(dns::BuildMessage(m, dns::kMaxMessageSize, &result.reply) == dns::BuildError::kOk);
  REQUIRE(dns::ParseMessage(result.reply, &m) == dns::ParseError::kOk);
  return result;
}

dns::Message Parse(std::span<const uint8_t> bytes) {
  dns::Message message;
  REQUIRE(dns::ParseMessage(bytes, &message) == dns::ParseError::kOk);
  return message;
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
  upstream::Result result = Upstream("www.example.com.", dns::RrType::kA,
                                     {RR("www.example.com. 60 IN A 192.0.2.1")}, true);
  std::vector<uint8_t> out;
  REQUIRE(ClientReply(result, client, &out));
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
    std::vector<uint8_t> out;
    REQUIRE(ClientReply(Upstream("www.example.com.", dns::RrType::kA,
                                 {RR("www.example.com. 60 IN A 192.0.2.1")}, true),
                        client, &out));
    dns::Message reply = Parse(out);
    CHECK_FALSE(reply.edns.has_value());
    CHECK(reply.header.id == 0xbeef);
    CHECK(reply.answers.size() == 1);
  }
  SECTION("ours is added for a client with EDNS when the upstream sent none") {
    ClientQuery client = Client("www.example.com.", dns::RrType::kA, 4096);
    std::vector<uint8_t> out;
    REQUIRE(ClientReply(Upstream("www.example.com.", dns::RrType::kA,
                                 {RR("www.example.com. 60 IN A 192.0.2.1")}, false),
                        client, &out));
    dns::Message reply = Parse(out);
    REQUIRE(reply.edns.has_value());
    CHECK(reply.edns->udp_payload_size == 1232);
  }
}

TEST_CASE("a forwarded reply too big for the client's UDP buffer is cut at an RRset with TC",
          "[server][forward]") {
  std::vector<dns::ResourceRecord> records = {RR("big.example.com. 60 IN CNAME pool.example.com.")};
  for (auto& record : ManyA("pool.example.com.", 100)) records.push_back(record);
  upstream::Result result = Upstream("big.example.com.", dns::RrType::kA, records, true);
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
  std::vector<uint8_t> out;
  REQUIRE(ClientReply(result, client, &out));
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
        Parse(WriteEmptyResponse(client.query, dns::Rcode::kServFail, /*aa=*/false, buffer));
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

}  // namespace kdns::server

#include "common/upstream/wire.h"

#include <catch2/catch.hpp>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/testing.h"
#include "common/upstream/testing.h"
#include "test/support/fake_dns_server.h"
#include "test/unit/allocation_counter.h"

namespace kdns::upstream {
namespace {

using dns::testing::N;
using dns::testing::Parse;
using testing::FakeUpstream;

Request MakeRequest(std::string_view name, dns::RrType type = dns::RrType::kA) {
  Request request;
  request.qname = N(name);
  request.qtype = type;
  return request;
}

// The query sent upstream for `request` with ID `id`: EDNS, 1232 bytes.
std::vector<uint8_t> QueryBytes(const Request& request, uint16_t id) {
  std::vector<uint8_t> bytes;
  REQUIRE(BuildQuery(request, id, EdnsMode::kWithEdns, 1232, &bytes));
  return bytes;
}

TEST_CASE("With 0x20 the upstream query spells the name as given", "[upstream][0x20]") {
  const Request request = MakeRequest("www.example.");
  const dns::Name sent = N("wWW.eXample.");
  std::vector<uint8_t> bytes;
  REQUIRE(BuildQuery(request, 1, EdnsMode::kWithEdns, 1232, &bytes, &sent));
  CHECK(Parse(bytes).questions[0].name.IdenticalTo(sent));
}

TEST_CASE("An upstream query carries our ID, RD, CD, the question as asked and EDNS 1232",
          "[upstream]") {
  Request request = MakeRequest("WwW.Example.");
  request.dnssec_ok = true;
  request.checking_disabled = true;
  std::vector<uint8_t> bytes;
  REQUIRE(BuildQuery(request, 0xBEEF, EdnsMode::kWithEdns, 1232, &bytes));
  dns::Message query = Parse(bytes);
  CHECK(query.header.id == 0xBEEF);
  CHECK_FALSE(query.header.qr);
  CHECK(query.header.rd);
  CHECK(query.header.cd);
  REQUIRE(query.questions.size() == 1);
  CHECK(query.questions[0].name.IdenticalTo(N("WwW.Example.")));
  REQUIRE(query.edns.has_value());
  CHECK(query.edns->udp_payload_size == 1232);
  CHECK(query.edns->dnssec_ok);

  REQUIRE(BuildQuery(request, 1, EdnsMode::kWithoutEdns, 1232, &bytes));
  CHECK_FALSE(Parse(bytes).edns.has_value());
}

TEST_CASE("An upstream query carries the client's address only when asked to, with EDNS",
          "[upstream][client_address]") {
  Request request = MakeRequest("www.example.");
  std::vector<uint8_t> bytes;
  // No client: nothing to carry.
  REQUIRE(BuildQuery(request, 1, EdnsMode::kWithEdns, 1232, &bytes, nullptr, uint16_t{65432}));
  CHECK(Parse(bytes).edns->options.empty());
  request.client = *loop::SocketAddress::Parse("[fd00::17]:41000");
  // Not for this server.
  REQUIRE(BuildQuery(request, 1, EdnsMode::kWithEdns, 1232, &bytes));
  CHECK(Parse(bytes).edns->options.empty());
  // For this one: the option of the code asked for, with the longest name too.
  request.qname = N(std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') +
                    "." + std::string(61, 'd') + ".");
  REQUIRE(BuildQuery(request, 1, EdnsMode::kWithEdns, 1232, &bytes, nullptr, uint16_t{65001}));
  const dns::Message query = Parse(bytes);
  dns::ClientAddress client;
  REQUIRE(dns::FindClientAddress(query.edns->options, 65001, &client) ==
          dns::ClientAddressFound::kFound);
  CHECK(client == dns::ClientAddress{*IpAddress::Parse("fd00::17"), 41000});
  // Without EDNS there is nowhere to carry it.
  REQUIRE(BuildQuery(request, 1, EdnsMode::kWithoutEdns, 1232, &bytes, nullptr, uint16_t{65001}));
  CHECK_FALSE(Parse(bytes).edns.has_value());
}

TEST_CASE("A reply matches only with QR, our ID and our question", "[upstream]") {
  Request request = MakeRequest("www.example.");
  const std::vector<uint8_t> query_bytes = QueryBytes(request, 77);
  const dns::Message query = Parse(query_bytes);
  const auto address = FakeUpstream::A(192, 0, 2, 1);
  dns::Message parsed;

  SECTION("the real answer, whatever the case of the echoed name") {
    dns::Message upper = query;
    upper.questions[0].name = N("WWW.EXAMPLE.");
    CHECK(MatchReply(FakeUpstream::Answer(upper, address), 77, request, &parsed) == Match::kOk);
    CHECK(parsed.answers.size() == 1);
  }
  SECTION("bytes after the last record: tolerated, and where the message ends is said") {
    std::vector<uint8_t> bytes = FakeUpstream::Answer(query, address);
    const size_t message_size = bytes.size();
    bytes.insert(bytes.end(), {0, 0, 0xde, 0xad});
    size_t end = 0;
    CHECK(MatchReply(bytes, 77, request, &parsed, &end) == Match::kOk);
    CHECK(end == message_size);
  }
  SECTION("0x20: the name must be spelt as sent; another case is kWrongCase") {
    const dns::Name sent = N("wWw.ExamPle.");
    dns::Message echoed = query;
    echoed.questions[0].name = sent;
    const auto decode = GENERATE(ReplyDecode::kWhole, ReplyDecode::kQuestion);
    CHECK(MatchReply(FakeUpstream::Answer(echoed, address), 77, request, &parsed, nullptr, decode,
                     &sent) == Match::kOk);
    CHECK(MatchReply(FakeUpstream::Answer(query, address), 77, request, &parsed, nullptr, decode,
                     &sent) == Match::kWrongCase);
    dns::Message other = query;
    other.questions[0].name = N("wWw.other.");
    CHECK(MatchReply(FakeUpstream::Answer(other, address), 77, request, &parsed, nullptr, decode,
                     &sent) == Match::kWrongQuestion);
  }
  SECTION("another ID") {
    CHECK(MatchReply(FakeUpstream::Answer(query, address), 78, request, &parsed) ==
          Match::kWrongId);
  }
  SECTION("our own query echoed back") {
    CHECK(MatchReply(query_bytes, 77, request, &parsed) == Match::kNotResponse);
  }
  SECTION("another name, type or class") {
    dns::Message other = query;
    other.questions[0].name = N("www.example.org.");
    CHECK(MatchReply(FakeUpstream::Answer(other, address), 77, request, &parsed) ==
          Match::kWrongQuestion);
    other = query;
    other.questions[0].type = dns::RrType::kAaaa;
    CHECK(MatchReply(FakeUpstream::Answer(other, address), 77, request, &parsed) ==
          Match::kWrongQuestion);
    other = query;
    other.questions[0].cls = dns::RrClass::kCh;
    CHECK(MatchReply(FakeUpstream::Answer(other, address), 77, request, &parsed) ==
          Match::kWrongQuestion);
  }
  SECTION("no question: accepted for an error rcode only") {
    dns::Message empty = query;
    empty.questions.clear();
    CHECK(MatchReply(FakeUpstream::Answer(empty, address, dns::Rcode::kFormErr), 77, request,
                     &parsed) == Match::kOk);
    CHECK(MatchReply(FakeUpstream::Answer(empty, address, dns::Rcode::kServFail), 77, request,
                     &parsed) == Match::kOk);
    CHECK(MatchReply(FakeUpstream::Answer(empty, address, dns::Rcode::kNxDomain), 77, request,
                     &parsed) == Match::kWrongQuestion);
  }
  SECTION("malformed") {
    std::vector<uint8_t> bytes = FakeUpstream::Answer(query, address);
    bytes.resize(bytes.size() - 3);
    CHECK(MatchReply(bytes, 77, request, &parsed) == Match::kMalformed);
    CHECK(MatchReply(std::vector<uint8_t>{0, 77, 0x81}, 77, request, &parsed) == Match::kMalformed);
  }
}

TEST_CASE("Decoding the question only matches as the whole decode does, keeping no records",
          "[upstream]") {
  Request request = MakeRequest("www.example.");
  const std::vector<uint8_t> query_bytes = QueryBytes(request, 77);
  const dns::Message query = Parse(query_bytes);
  const auto address = FakeUpstream::A(192, 0, 2, 1);
  dns::Message parsed;
  auto match = [&](const std::vector<uint8_t>& bytes, uint16_t id, size_t* end = nullptr) {
    return MatchReply(bytes, id, request, &parsed, end, ReplyDecode::kQuestion);
  };

  SECTION("the answer: header, question and EDNS, the records left in the bytes") {
    dns::Message upper = query;
    upper.questions[0].name = N("WWW.EXAMPLE.");
    std::vector<uint8_t> bytes = FakeUpstream::Answer(upper, address);
    bytes.insert(bytes.end(), {0, 0});  // trailing bytes: tolerated, cut off
    size_t end = 0;
    REQUIRE(match(bytes, 77, &end) == Match::kOk);
    CHECK(end == bytes.size() - 2);
    CHECK(parsed.header.ancount == 1);
    CHECK(parsed.answers.empty());
    REQUIRE(parsed.questions.size() == 1);
    CHECK(parsed.questions[0].name == N("www.example."));
    CHECK(parsed.edns.has_value());
    CHECK(parsed.rcode() == dns::Rcode::kNoError);
  }
  SECTION("what the whole decode refuses, this refuses too") {
    CHECK(match(FakeUpstream::Answer(query, address), 78) == Match::kWrongId);
    CHECK(match(query_bytes, 77) == Match::kNotResponse);
    dns::Message other = query;
    other.questions[0].type = dns::RrType::kAaaa;
    CHECK(match(FakeUpstream::Answer(other, address), 77) == Match::kWrongQuestion);
    other = query;
    other.questions[0].name = N("www.example.org.");
    CHECK(match(FakeUpstream::Answer(other, address), 77) == Match::kWrongQuestion);
    std::vector<uint8_t> cut = FakeUpstream::Answer(query, address);
    cut.resize(cut.size() - 3);
    CHECK(match(cut, 77) == Match::kMalformed);
    dns::Message empty = query;
    empty.questions.clear();
    CHECK(match(FakeUpstream::Answer(empty, address, dns::Rcode::kFormErr), 77) == Match::kOk);
    CHECK(parsed.rcode() == dns::Rcode::kFormErr);
    CHECK(match(FakeUpstream::Answer(empty, address, dns::Rcode::kNxDomain), 77) ==
          Match::kWrongQuestion);
  }
  SECTION("a large answer costs no allocation once the message has room for the question") {
    // 480 A records (about 7.7 KiB): decoded whole they would take some 390 KiB.
    dns::Message reply = kdns::testing::ReplyTo(query);
    for (int i = 0; i < 480; ++i) {
      reply.answers.push_back(dns::ResourceRecord{
          N("www.example."), dns::RrType::kA, dns::RrClass::kIn, 60,
          FakeUpstream::A(10, 0, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i))});
    }
    reply.edns = dns::Edns{};
    const std::vector<uint8_t> bytes = kdns::testing::Encode(reply);
    REQUIRE(match(bytes, 77) == Match::kOk);  // the first grows `parsed` to one question
    const size_t before = kdns::testing::AllocationCount();
    const Match again = match(bytes, 77);
    const size_t after = kdns::testing::AllocationCount();
    CHECK(again == Match::kOk);
    CHECK(after == before);
    CHECK(parsed.header.ancount == 480);
    CHECK(parsed.answers.empty());
  }
}

TEST_CASE("A shared reply is rewritten with each client's ID and name case", "[upstream]") {
  Request request = MakeRequest("www.example.");
  std::vector<uint8_t> reply =
      FakeUpstream::Answer(Parse(QueryBytes(request, 5)), FakeUpstream::A(192, 0, 2, 1));
  REQUIRE(RewriteForClient(reply, 0x1234, N("WWW.example.")));
  dns::Message rewritten = Parse(reply);
  CHECK(rewritten.header.id == 0x1234);
  CHECK(rewritten.questions[0].name.IdenticalTo(N("WWW.example.")));
  // The answer's owner is compressed to the question: it follows the new case.
  CHECK(rewritten.answers[0].owner.IdenticalTo(N("WWW.example.")));

  SECTION("another name is left alone") {
    REQUIRE(RewriteForClient(reply, 1, N("xxx.example.")));
    CHECK(Parse(reply).questions[0].name.IdenticalTo(N("WWW.example.")));
  }
  SECTION("a short packet") {
    std::vector<uint8_t> tiny = {1, 2, 3};
    CHECK_FALSE(RewriteForClient(tiny, 1, N("a.")));
  }
}

}  // namespace
}  // namespace kdns::upstream

#include "common/server/response_rate_limiter.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/header.h"
#include "common/dns/parser.h"

namespace kdns::server {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

loop::SocketAddress Client(const std::string& ip) {
  return *loop::SocketAddress::FromHostPort(ip, 5353);
}

// A response to `name`/`type` with `rcode`, `answers` A records and, for negative answers,
// an SOA of `zone` in the authority section.
std::vector<uint8_t> Response(const std::string& name, dns::RrType type, dns::Rcode rcode,
                              int answers, const std::string& zone = "example.com.") {
  std::vector<uint8_t> buffer(4096);
  dns::MessageBuilder builder(buffer);
  builder.header().id = 7;
  builder.header().qr = true;
  builder.header().rcode = rcode;
  const dns::Name owner = *dns::Name::FromText(name);
  REQUIRE(builder.AddQuestion(owner, type, dns::RrClass::kIn) == dns::BuildError::kOk);
  builder.BeginRrset(dns::Section::kAnswer);
  for (int i = 0; i < answers; ++i) {
    builder.Add(owner, dns::RrType::kA, dns::RrClass::kIn, 30,
                dns::RdataA{*IpAddress::Parse("10.0.0." + std::to_string(i))});
  }
  REQUIRE(builder.EndRrset() == dns::BuildError::kOk);
  if (answers == 0 && rcode != dns::Rcode::kServFail) {
    const dns::Name apex = *dns::Name::FromText(zone);
    dns::ResourceRecord soa;
    soa.owner = apex;
    soa.type = dns::RrType::kSoa;
    soa.ttl_s = 30;
    soa.rdata = dns::RdataSoa{*dns::Name::FromText("ns." + zone),
                              *dns::Name::FromText("hostmaster." + zone),
                              1,
                              3600,
                              600,
                              86400,
                              30};
    REQUIRE(builder.AddRecord(dns::Section::kAuthority, soa) == dns::BuildError::kOk);
  }
  const std::span<const uint8_t> message = builder.Finish();
  return {message.begin(), message.end()};
}

int Sent(ResponseRateLimiter& rrl, const loop::SocketAddress& client,
         const std::vector<uint8_t>& response, int count, uint64_t now) {
  int sent = 0;
  for (int i = 0; i < count; ++i)
    sent += rrl.Check(client, response, now) == ResponseVerdict::kSend;
  return sent;
}

TEST_CASE("responses are classified into BIND's buckets", "[rrl]") {
  uint64_t a = 0, b = 0;
  CHECK(ClassifyResponse(Response("www.example.com.", dns::RrType::kA, dns::Rcode::kNoError, 1),
                         &a) == ResponseKind::kAnswer);
  CHECK(ClassifyResponse(Response("WWW.example.com.", dns::RrType::kA, dns::Rcode::kNoError, 2),
                         &b) == ResponseKind::kAnswer);
  CHECK(a == b);  // case does not make another answer
  CHECK(ClassifyResponse(Response("www.example.com.", dns::RrType::kAaaa, dns::Rcode::kNoError, 1),
                         &b) == ResponseKind::kAnswer);
  CHECK(a != b);  // another type does
  CHECK(ClassifyResponse(Response("www.example.com.", dns::RrType::kTxt, dns::Rcode::kNoError, 0),
                         &a) == ResponseKind::kNoData);
  // Every random name of one zone is one NXDOMAIN bucket.
  CHECK(ClassifyResponse(Response("x1.example.com.", dns::RrType::kA, dns::Rcode::kNxDomain, 0),
                         &a) == ResponseKind::kNxDomain);
  CHECK(ClassifyResponse(Response("x2.y.example.com.", dns::RrType::kA, dns::Rcode::kNxDomain, 0),
                         &b) == ResponseKind::kNxDomain);
  CHECK(a == b);
  CHECK(ClassifyResponse(
            Response("x.example.org.", dns::RrType::kA, dns::Rcode::kNxDomain, 0, "example.org."),
            &b) == ResponseKind::kNxDomain);
  CHECK(a != b);
  CHECK(ClassifyResponse(Response("x.example.com.", dns::RrType::kA, dns::Rcode::kServFail, 0),
                         &a) == ResponseKind::kError);
  const std::vector<uint8_t> garbage = {1, 2, 3};
  CHECK(ClassifyResponse(garbage, &a) == ResponseKind::kError);
}

TEST_CASE("identical responses to one netblock are limited, each bucket on its own", "[rrl]") {
  ResponseRateOptions options;
  options.responses_per_second = 5;
  options.slip = 0;
  ResponseRateLimiter rrl(options);
  REQUIRE(rrl.enabled());
  const auto answer = Response("www.example.com.", dns::RrType::kA, dns::Rcode::kNoError, 1);
  const auto other = Response("mail.example.com.", dns::RrType::kA, dns::Rcode::kNoError, 1);
  const auto nx1 = Response("a.example.com.", dns::RrType::kA, dns::Rcode::kNxDomain, 0);
  const auto nx2 = Response("b.example.com.", dns::RrType::kA, dns::Rcode::kNxDomain, 0);
  const auto error = Response("www.example.com.", dns::RrType::kA, dns::Rcode::kServFail, 0);
  const uint64_t now = 3 * kSecond;
  CHECK(Sent(rrl, Client("192.0.2.1"), answer, 20, now) == 5);
  CHECK(Sent(rrl, Client("192.0.2.99"), answer, 20, now) == 0);  // the same /24
  CHECK(Sent(rrl, Client("192.0.3.1"), answer, 20, now) == 5);   // another /24
  CHECK(Sent(rrl, Client("192.0.2.1"), other, 20, now) == 5);    // another answer
  // NXDOMAIN for random names of one zone: one bucket, separate from the answers.
  CHECK(Sent(rrl, Client("192.0.2.1"), nx1, 3, now) == 3);
  CHECK(Sent(rrl, Client("192.0.2.1"), nx2, 10, now) == 2);
  CHECK(Sent(rrl, Client("192.0.2.1"), error, 10, now) == 5);
  // A second later each bucket has 5 again.
  CHECK(Sent(rrl, Client("192.0.2.1"), answer, 20, now + kSecond) == 5);
}

TEST_CASE("a limited response slips as TC every slip-th time; exempt and off send all", "[rrl]") {
  ResponseRateOptions options;
  options.responses_per_second = 1;
  options.slip = 2;
  ResponseRateLimiter rrl(options);
  const auto answer = Response("www.example.com.", dns::RrType::kA, dns::Rcode::kNoError, 1);
  CHECK(rrl.Check(Client("192.0.2.1"), answer, kSecond) == ResponseVerdict::kSend);
  CHECK(rrl.Check(Client("192.0.2.1"), answer, kSecond) == ResponseVerdict::kDrop);
  CHECK(rrl.Check(Client("192.0.2.1"), answer, kSecond) == ResponseVerdict::kSlip);
  CHECK(rrl.slipped() == 1);
  ResponseRateLimiter off({});
  CHECK_FALSE(off.enabled());
  CHECK(Sent(off, Client("192.0.2.1"), answer, 100, kSecond) == 100);
  options.exempt = {*IpPrefix::Parse("192.0.2.0/24")};
  ResponseRateLimiter exempt(options);
  CHECK(Sent(exempt, Client("192.0.2.1"), answer, 100, kSecond) == 100);
}

TEST_CASE("the truncated form keeps the header and question only", "[rrl]") {
  const auto answer = Response("www.example.com.", dns::RrType::kA, dns::Rcode::kNoError, 3);
  std::vector<uint8_t> out(512);
  const size_t size = WriteTruncated(answer, out);
  REQUIRE(size == dns::kHeaderSize + 17 + 4);
  dns::Header header;
  REQUIRE(dns::ParseHeader(std::span(out).first(size), &header) == dns::ParseError::kOk);
  CHECK(header.qr);
  CHECK(header.tc);
  CHECK(header.id == 7);
  CHECK(header.qdcount == 1);
  CHECK(header.ancount == 0);
  CHECK(header.arcount == 0);
  // Too small an output, or no question: nothing.
  std::vector<uint8_t> tiny(20);
  CHECK(WriteTruncated(answer, tiny) == 0);
  const std::vector<uint8_t> header_only(answer.begin(), answer.begin() + 12);
  CHECK(WriteTruncated(header_only, out) == 0);
}

TEST_CASE("the refused form keeps the header and question, REFUSED and no TC", "[rrl]") {
  const auto answer = Response("www.example.com.", dns::RrType::kA, dns::Rcode::kNoError, 3);
  std::vector<uint8_t> out(512);
  const size_t size = WriteLimitedReply(answer, LimitedReply::kRefused, out);
  REQUIRE(size == dns::kHeaderSize + 17 + 4);
  dns::Header header;
  REQUIRE(dns::ParseHeader(std::span(out).first(size), &header) == dns::ParseError::kOk);
  CHECK(header.qr);
  CHECK_FALSE(header.tc);
  CHECK(header.rcode == dns::Rcode::kRefused);
  CHECK(header.qdcount == 1);
  CHECK(header.ancount == 0);
}

}  // namespace
}  // namespace kdns::server

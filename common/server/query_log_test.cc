#include "common/server/query_log.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/name.h"
#include "common/dns/parser.h"

namespace kdns::server {
namespace {

struct Fixture {
  ManualClock clock{10'000};
  std::vector<std::string> lines;
  size_t bytes = 0;

  QueryLog::Sink Sink() {
    return [this](std::string_view line) {
      lines.emplace_back(line);
      bytes += line.size() + 1;
    };
  }
};

const loop::SocketAddress kClient = *loop::SocketAddress::FromHostPort("10.1.2.3", 41000);
const dns::Name kName = *dns::Name::FromText("www.example.com.");

QueryLogEntry Entry(AnswerSource source = AnswerSource::kCache) {
  return QueryLogEntry{
      kClient, kName, dns::RrType::kA, dns::Rcode::kNoError, source, 84, 4711, dns::Transport::kTcp,
      76};
}

TEST_CASE("a query log line names the client, question, rcode, source and duration",
          "[query_log]") {
  Fixture f;
  QueryLog log({QueryLogOptions::Detail::kBasic, 0, 1}, f.clock, f.Sink());
  REQUIRE(log.Sample());
  log.Log(Entry());
  REQUIRE(f.lines == std::vector<std::string>{
                         "query client=10.1.2.3#41000 name=www.example.com. type=A rcode=NOERROR "
                         "source=cache duration_us=84"});
  SECTION("extra adds the ID, transport and reply size") {
    QueryLog extra({QueryLogOptions::Detail::kExtra, 0, 1}, f.clock, f.Sink());
    CHECK(extra.Format(Entry(AnswerSource::kStale)) ==
          "query client=10.1.2.3#41000 name=www.example.com. type=A rcode=NOERROR source=stale "
          "duration_us=84 id=4711 transport=tcp bytes=76");
  }
}

TEST_CASE("an answer's line takes its rcode and size from the reply itself", "[query_log]") {
  Fixture f;
  QueryLog log({QueryLogOptions::Detail::kExtra, 0, 1}, f.clock, f.Sink());
  dns::Query query;
  query.header.id = 4711;
  query.qname = kName;
  query.qtype = dns::RrType::kAaaa;
  std::vector<uint8_t> reply(40, 0);
  reply[3] = 0x03;  // NXDOMAIN
  log.LogAnswer(kClient, query, reply, AnswerSource::kUpstream, dns::Transport::kUdp, 9);
  // Too short to have a header: counted as SERVFAIL, never read past its end.
  log.LogAnswer(kClient, query, std::span(reply).first(5), AnswerSource::kFailure,
                dns::Transport::kTcp, 10);
  CHECK(f.lines == std::vector<std::string>{
                       "query client=10.1.2.3#41000 name=www.example.com. type=AAAA rcode=NXDOMAIN "
                       "source=upstream duration_us=9 id=4711 transport=udp bytes=40",
                       "query client=10.1.2.3#41000 name=www.example.com. type=AAAA rcode=SERVFAIL "
                       "source=failure duration_us=10 id=4711 transport=tcp bytes=5"});
}

TEST_CASE("every answer source has its own name", "[query_log]") {
  CHECK(std::string(AnswerSourceName(AnswerSource::kCache)) == "cache");
  CHECK(std::string(AnswerSourceName(AnswerSource::kUpstream)) == "upstream");
  CHECK(std::string(AnswerSourceName(AnswerSource::kStale)) == "stale");
  CHECK(std::string(AnswerSourceName(AnswerSource::kLocal)) == "local");
}

TEST_CASE("a query log that is off samples nothing", "[query_log]") {
  Fixture f;
  QueryLog log({}, f.clock, f.Sink());
  CHECK_FALSE(log.enabled());
  CHECK_FALSE(log.Sample());
}

TEST_CASE("a query log switched at run time samples and writes as the new detail says",
          "[query_log]") {
  Fixture f;
  QueryLog log({}, f.clock, f.Sink());
  log.SetDetail(QueryLogOptions::Detail::kExtra);
  CHECK(log.enabled());
  REQUIRE(log.Sample());
  log.Log(Entry());
  REQUIRE(f.lines.size() == 1);
  CHECK(f.lines[0].find(" id=4711 transport=tcp bytes=76") != std::string::npos);
  log.SetDetail(QueryLogOptions::Detail::kOff);
  CHECK_FALSE(log.enabled());
  CHECK_FALSE(log.Sample());
}

TEST_CASE("a flood writes at most the limit of lines per second and reports the rest",
          "[query_log]") {
  Fixture f;
  QueryLog log({QueryLogOptions::Detail::kBasic, 10, 1}, f.clock, f.Sink());
  for (int i = 0; i < 1000; ++i) log.Log(Entry());
  CHECK(f.lines.size() == 10);
  CHECK(log.written() == 10);
  CHECK(log.suppressed() == 990);
  // The next second: the report counts as one of its lines.
  f.clock.AdvanceMs(1000);
  for (int i = 0; i < 1000; ++i) log.Log(Entry());
  REQUIRE(f.lines.size() == 20);
  CHECK(f.lines[10] == "query log: 990 lines suppressed (over 10 lines a second)");
  CHECK(log.written() == 19);
  CHECK(log.suppressed() == 990 + 991);
  SECTION("so the bytes written stay within the limit however long the flood lasts") {
    const size_t line_bytes = log.Format(Entry()).size() + 1;
    for (int second = 0; second < 60; ++second) {
      f.clock.AdvanceMs(1000);
      for (int i = 0; i < 500; ++i) log.Log(Entry());
    }
    CHECK(f.bytes <= 62 * 10 * (line_bytes + 20));
  }
}

TEST_CASE("a limit of one line a second still writes a line every second", "[query_log]") {
  Fixture f;
  QueryLog log({QueryLogOptions::Detail::kBasic, 1, 1}, f.clock, f.Sink());
  for (int second = 0; second < 3; ++second) {
    for (int i = 0; i < 5; ++i) log.Log(Entry());
    f.clock.AdvanceMs(1000);
  }
  CHECK(log.written() == 3);
}

TEST_CASE("sampling logs about one query in N", "[query_log]") {
  Fixture f;
  QueryLog log({QueryLogOptions::Detail::kBasic, 0, 10}, f.clock, f.Sink());
  int sampled = 0;
  for (int i = 0; i < 10'000; ++i) sampled += log.Sample() ? 1 : 0;
  // 1000 expected; the bounds are ten standard deviations wide.
  CHECK(sampled > 700);
  CHECK(sampled < 1300);
}

}  // namespace
}  // namespace kdns::server

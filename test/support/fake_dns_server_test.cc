#include "test/support/fake_dns_server.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/dns/testing.h"
#include "common/server/server_test_util.h"

namespace kdns::testing {
namespace {

using dns::testing::QuerySpec;
using server::testing::TcpClient;
using server::testing::UdpClient;

bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 5000 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

dns::Message Parse(const std::optional<std::vector<uint8_t>>& bytes) {
  REQUIRE(bytes.has_value());
  return dns::testing::Parse(*bytes);
}

TEST_CASE("The fake DNS server answers as scripted over UDP and TCP on one port",
          "[fake_dns_server]") {
  FakeDnsServerThread server(AnswerA(A("192.0.2.7")));
  REQUIRE(server.address().port() != 0);
  UdpClient udp(server.address());
  REQUIRE(udp.Send(QuerySpec("a.example.").Id(1).Bytes()));
  dns::Message reply = Parse(udp.Receive());
  CHECK(reply.header.id == 1);
  REQUIRE(reply.answers.size() == 1);
  CHECK(std::get<dns::RdataA>(reply.answers[0].rdata).address.ToString() == "192.0.2.7");

  TcpClient tcp(server.address());
  REQUIRE(tcp.Send(QuerySpec("b.example.").Id(2).Bytes()));
  CHECK(Parse(tcp.Receive()).header.id == 2);
  CHECK(server.CountQueries(Transport::kUdp) == 1);
  CHECK(server.CountQueries(Transport::kTcp) == 1);
  const std::vector<ReceivedQuery> queries = server.CopyQueries();
  REQUIRE(queries.size() == 2);
  CHECK(queries[1].message.questions[0].name == dns::testing::N("b.example."));
}

TEST_CASE("The fake DNS server's scripts", "[fake_dns_server]") {
  FakeDnsServerThread server(Silent());
  UdpClient udp(server.address());
  SECTION("an rcode") {
    server.set_script(AnswerRcode(dns::Rcode::kServFail));
    REQUIRE(udp.Send(QuerySpec("a.example.").Bytes()));
    dns::Message reply = Parse(udp.Receive());
    CHECK(reply.header.rcode == dns::Rcode::kServFail);
    CHECK(reply.answers.empty());
  }
  SECTION("truncated over UDP, answered over TCP") {
    server.set_script(TruncatedOverUdp(AnswerA(A("192.0.2.1"))));
    REQUIRE(udp.Send(QuerySpec("a.example.").Bytes()));
    dns::Message reply = Parse(udp.Receive());
    CHECK(reply.header.tc);
    CHECK(reply.answers.empty());
    TcpClient tcp(server.address());
    REQUIRE(tcp.Send(QuerySpec("a.example.").Bytes()));
    CHECK(Parse(tcp.Receive()).answers.size() == 1);
  }
  SECTION("a wrong ID, then the answer, after a delay") {
    server.set_script(Delayed(50, WrongIdFirst(AnswerA(A("192.0.2.1")))));
    REQUIRE(udp.Send(QuerySpec("a.example.").Id(7).Bytes()));
    CHECK(Parse(udp.Receive()).header.id == 8);
    CHECK(Parse(udp.Receive()).header.id == 7);
  }
  SECTION("a wrong question, then the answer") {
    server.set_script(WrongQuestionFirst(AnswerA(A("192.0.2.1"))));
    REQUIRE(udp.Send(QuerySpec("a.example.").Bytes()));
    CHECK(Parse(udp.Receive()).questions[0].name == dns::testing::N("wrong.example."));
    CHECK(Parse(udp.Receive()).questions[0].name == dns::testing::N("a.example."));
  }
  SECTION("the question in flipped case, then the answer (0x20)") {
    server.set_script(WrongCaseFirst(AnswerA(A("192.0.2.1"))));
    REQUIRE(udp.Send(QuerySpec("wWw.Example.").Bytes()));
    CHECK(Parse(udp.Receive()).questions[0].name.IdenticalTo(dns::testing::N("WwW.eXAMPLE.")));
    CHECK(Parse(udp.Receive()).questions[0].name.IdenticalTo(dns::testing::N("wWw.Example.")));
  }
  SECTION("the question lower-cased (does not echo 0x20)") {
    server.set_script(Lowercased(AnswerA(A("192.0.2.1"))));
    REQUIRE(udp.Send(QuerySpec("wWw.Example.").Bytes()));
    const dns::Message reply = Parse(udp.Receive());
    CHECK(reply.questions[0].name.IdenticalTo(dns::testing::N("www.example.")));
    CHECK(reply.answers.size() == 1);
  }
  SECTION("silence, and garbage counted apart") {
    REQUIRE(udp.Send(QuerySpec("a.example.").Id(1).Bytes()));
    REQUIRE(udp.Send(std::vector<uint8_t>{1, 2, 3}));
    // Queries are handled in order: the first reply to come is the answer to the third.
    REQUIRE(WaitFor([&] { return server.garbage_count() == 1; }));
    server.set_script(AnswerA(A("192.0.2.1")));
    REQUIRE(udp.Send(QuerySpec("a.example.").Id(3).Bytes()));
    CHECK(Parse(udp.Receive()).header.id == 3);
    CHECK(server.CountQueries() == 2);
  }
}

TEST_CASE("A TCP connection of the fake DNS server closes after its quota of queries",
          "[fake_dns_server]") {
  FakeDnsServerThread server(AnswerA(A("192.0.2.1")), {.tcp_queries_per_connection = 1});
  TcpClient tcp(server.address());
  REQUIRE(tcp.Send(QuerySpec("a.example.").Id(1).Bytes()));
  CHECK(Parse(tcp.Receive()).header.id == 1);
  REQUIRE(tcp.Send(QuerySpec("a.example.").Id(2).Bytes()));
  CHECK(tcp.WaitClosed());
}

}  // namespace
}  // namespace kdns::testing

#include "frontend-cache/chaos.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/base/version.h"
#include "frontend-cache/testing.h"

namespace kdns::frontend::testing {
namespace {

using dns::RrClass;
using dns::RrType;
using dns::testing::N;

loop::SocketAddress Up(std::string_view ip, uint16_t port = 53) {
  return loop::SocketAddressOf(*IpAddress::Parse(ip), port);
}

ChaosStats Stats() {
  ChaosStats stats;
  stats.cache_size = 1000;
  stats.insertions = 42;
  stats.evictions = 3;
  stats.misses = 77;
  stats.hits = 12345678901;
  stats.servers = {{Up("127.0.0.1", 10053), 50, 1},
                   {Up("8.8.8.8"), 20, 2},
                   {Up("127.0.0.1", 10053), 5, 1},  // same server under another domain: summed
                   {Up("fd00::1"), 0, 0}};
  return stats;
}

dns::Message Ask(std::string_view name, RrType type = RrType::kTxt, Edns edns = Edns::kNone,
                 const ChaosStats& stats = Stats()) {
  auto query = MakeQuery(name, type, 0xBEEF, edns, RrClass::kCh);
  std::vector<uint8_t> out(512);
  size_t size = AnswerChaos(query.query, stats, out, out.size());
  REQUIRE(size > 0);
  return Parse(std::span(out.data(), size));
}

std::vector<std::string> Txt(const dns::Message& reply) {
  REQUIRE(reply.answers.size() == 1);
  const dns::ResourceRecord& record = reply.answers[0];
  CHECK(record.type == RrType::kTxt);
  CHECK(record.cls == RrClass::kCh);
  CHECK(record.ttl_s == 0);
  return std::get<dns::RdataTxt>(record.rdata).strings;
}

TEST_CASE("Statistics names answer one TXT with one decimal string", "[frontend][chaos]") {
  auto [name, value] = GENERATE(table<std::string, std::string>({
      {"cachesize.bind.", "1000"},
      {"insertions.bind.", "42"},
      {"evictions.bind.", "3"},
      {"misses.bind.", "77"},
      {"hits.bind.", "12345678901"},
      {"version.bind.", std::string("kdns-") + kVersion},
  }));
  dns::Message reply = Ask(name);
  CHECK(reply.header.id == 0xBEEF);
  CHECK(reply.header.qr);
  CHECK(reply.header.aa);  // dnsmasq: auth stays 1 for its own TXT records
  CHECK(reply.header.ra);
  CHECK(reply.header.rd);
  CHECK(reply.header.rcode == dns::Rcode::kNoError);
  CHECK(reply.questions[0] == dns::Question{N(name), RrType::kTxt, RrClass::kCh});
  CHECK(reply.answers[0].owner.IdenticalTo(N(name)));
  CHECK(reply.authorities.empty());
  CHECK(reply.additionals.empty());
  CHECK_FALSE(reply.edns);
  CHECK(Txt(reply) == std::vector{value});
}

TEST_CASE("servers.bind is one TXT with one string per upstream", "[frontend][chaos]") {
  dns::Message reply = Ask("servers.bind.");
  CHECK(Txt(reply) ==
        std::vector<std::string>{"127.0.0.1#10053 55 2", "8.8.8.8#53 20 2", "fd00::1#53 0 0"});
}

TEST_CASE("servers.bind lists a tcp:// upstream apart from the same address over UDP",
          "[frontend][chaos]") {
  ChaosStats stats;
  stats.servers = {{upstream::Upstream(Up("10.96.0.10"), upstream::UpstreamTransport::kTcp), 7, 1},
                   {Up("10.96.0.10"), 3, 0}};
  CHECK(Txt(Ask("servers.bind.", RrType::kTxt, Edns::kNone, stats)) ==
        std::vector<std::string>{"tcp://10.96.0.10#53 7 1", "10.96.0.10#53 3 0"});
}

TEST_CASE("servers.bind with no upstream sends one empty string", "[frontend][chaos]") {
  ChaosStats stats;
  CHECK(Txt(Ask("servers.bind.", RrType::kTxt, Edns::kNone, stats)) == std::vector{std::string()});
}

TEST_CASE("CHAOS names match case-insensitively, echo the case, and answer ANY",
          "[frontend][chaos]") {
  dns::Message reply = Ask("HITS.Bind.", RrType::kAny);
  CHECK(reply.questions[0].name.IdenticalTo(N("HITS.Bind.")));
  CHECK(reply.answers[0].owner.IdenticalTo(N("HITS.Bind.")));
  CHECK(Txt(reply) == std::vector<std::string>{"12345678901"});
}

TEST_CASE("EDNS in the query gets an OPT with its DO bit", "[frontend][chaos]") {
  dns::Message reply = Ask("misses.bind.", RrType::kTxt, Edns::kDnssecOk);
  REQUIRE(reply.edns);
  CHECK(reply.edns->dnssec_ok);
  CHECK(reply.edns->udp_payload_size == dns::kDefaultUdpPayloadSize);
  CHECK(Txt(reply) == std::vector<std::string>{"77"});
}

TEST_CASE("Other CHAOS queries get NOTIMP", "[frontend][chaos]") {
  auto [name, type] = GENERATE(table<std::string, RrType>({
      {"id.server.", RrType::kTxt},
      {"authors.bind.", RrType::kTxt},
      {"hits.bind.", RrType::kA},
      {"example.com.", RrType::kTxt},
      {"hits.bind.example.", RrType::kTxt},
  }));
  dns::Message reply = Ask(name, type, Edns::kPlain);
  CHECK(reply.header.rcode == dns::Rcode::kNotImp);
  CHECK_FALSE(reply.header.aa);
  CHECK(reply.header.ra);
  CHECK(reply.answers.empty());
  CHECK(reply.questions[0].name.IdenticalTo(N(name)));
  CHECK(reply.edns);
}

TEST_CASE("Only class CH is answered", "[frontend][chaos]") {
  auto query = MakeQuery("hits.bind.", RrType::kTxt, 1, Edns::kNone, RrClass::kIn);
  std::vector<uint8_t> out(512);
  CHECK(AnswerChaos(query.query, Stats(), out, out.size()) == 0);
}

}  // namespace
}  // namespace kdns::frontend::testing

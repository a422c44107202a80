// Our wire format against independent parsers: a responder built from common/loop and
// common/dns answers real `dig` (BIND) and `kdig` (Knot) over UDP and TCP, and what they
// print must be exactly what we built (our own parse of the same bytes, in presentation
// format). Covers every record type the codec knows, compression, case echo, EDNS0,
// truncation at whole RRsets with TC, the TCP path, NXDOMAIN and FORMERR.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/message.h"
#include "common/dns/presentation.h"
#include "common/dns/reverse.h"
#include "common/dns/testing.h"
#include "test/integration/command.h"
#include "test/integration/responder.h"

namespace kdns::testing {
namespace {

dns::ResourceRecord Rr(const std::string& text) {
  dns::ResourceRecord record;
  dns::ParseError error = dns::RecordFromText(text, &record);
  INFO(text);
  REQUIRE(error == dns::ParseError::kOk);
  return record;
}

std::vector<dns::ResourceRecord> Rrs(const std::vector<std::string>& texts) {
  std::vector<dns::ResourceRecord> records;
  records.reserve(texts.size());
  for (const auto& text : texts) records.push_back(Rr(text));
  return records;
}

constexpr const char* kAllSoa =
    "all.kdns.test. 3600 IN SOA ns.dns.kdns.test. hostmaster.kdns.test. 1 28800 7200 604800 60";

std::map<std::string, ResponderEntry> Table() {
  std::map<std::string, ResponderEntry> table;
  table["all.kdns.test."] = {
      Rrs({
          "all.kdns.test. 30 IN A 192.0.2.1",
          "all.kdns.test. 30 IN A 192.0.2.2",
          "all.kdns.test. 30 IN AAAA 2001:db8::1",
          "all.kdns.test. 60 IN NS ns1.kdns.test.",
          "all.kdns.test. 30 IN MX 10 mail.kdns.test.",
          "all.kdns.test. 30 IN SRV 10 50 443 Target.KDNS.test.",
          R"(all.kdns.test. 30 IN TXT "1.1.0" "say \"hi\" \\ there" "bell\007")",
          R"(all.kdns.test. 30 IN HINFO "x86_64" "Linux")",
          "all.kdns.test. 30 IN PTR host.kdns.test.",
          kAllSoa,
          R"(all.kdns.test. 30 IN TYPE65280 \# 3 0A0B0C)",
      }),
      Rrs({"all.kdns.test. 60 IN NS ns1.kdns.test."}),
      Rrs({"ns1.kdns.test. 30 IN A 192.0.2.53", "ns1.kdns.test. 30 IN AAAA 2001:db8::53"}),
  };
  table["alias.kdns.test."] = {Rrs({"alias.kdns.test. 30 IN CNAME all.kdns.test."}), {}, {}};

  ResponderEntry big;
  for (int i = 0; i < 200; ++i) {
    big.answers.push_back(
        Rr("big.kdns.test. 30 IN A 10.0." + std::to_string(i / 100) + "." + std::to_string(i)));
  }
  table["big.kdns.test."] = big;

  // Reverse names built with our helpers, so dig -x checks them too.
  for (const char* ip : {"192.0.2.1", "2001:db8::1"}) {
    auto name = dns::ReverseName(*IpAddress::Parse(ip));
    table[name.ToText()] = {Rrs({name.ToText() + " 30 IN PTR all.kdns.test."}), {}, {}};
  }
  return table;
}

dns::ResourceRecord Soa() {
  return Rr("kdns.test. 60 IN SOA ns.dns.kdns.test. hostmaster.kdns.test. 1 28800 7200 604800 60");
}

enum class Sections { kAll, kAnswerOnly };

// Our own parse of the response we sent, in presentation format, section by section.
std::vector<std::string> OurLines(const std::vector<uint8_t>& response,
                                  Sections which = Sections::kAll) {
  dns::Message message = dns::testing::Parse(response);
  if (which == Sections::kAnswerOnly) {
    message.authorities.clear();
    message.additionals.clear();
  }
  std::vector<std::string> lines;
  for (auto section : {&message.answers, &message.authorities, &message.additionals}) {
    for (const auto& record : *section) {
      lines.push_back(RecordLines(dns::RecordToText(record)).at(0));
    }
  }
  return lines;
}

struct Client {
  std::string program;
  bool tcp;
};

std::vector<std::string> Query(const Responder& responder, const Client& client,
                               const std::vector<std::string>& args, std::string* raw = nullptr) {
  std::vector<std::string> argv = {
      client.program,
      "@127.0.0.1",
      "-p",
      std::to_string(client.tcp ? responder.tcp_port() : responder.udp_port()),
      client.tcp ? "+tcp" : "+notcp",
      "+time=5",
      "+retry=0"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult result = RunCommand(argv);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  if (raw != nullptr) *raw = result.output;
  return RecordLines(result.output);
}

const std::vector<std::string> kSections = {"+noall", "+answer", "+authority", "+additional"};

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

TEST_CASE("dig and kdig parse every record type we build exactly as we do", "[integration]") {
  Responder responder(Table(), Soa());
  auto client = GENERATE(Client{"dig", false}, Client{"dig", true}, Client{"kdig", false},
                         Client{"kdig", true});
  CAPTURE(client.program, client.tcp);

  std::vector<std::string> theirs =
      Query(responder, client, With(kSections, {"all.kdns.test.", "ANY"}));
  std::vector<std::string> ours = OurLines(responder.LastResponse());
  CHECK(theirs == ours);

  // And what we built is what the table holds: 11 answers, 1 authority, 2 additional.
  const dns::Message message = dns::testing::Parse(responder.LastResponse());
  CHECK(message.answers == Table()["all.kdns.test."].answers);
  CHECK(message.authorities.size() == 1);
  CHECK(message.additionals.size() == 2);
}

TEST_CASE("answers echo the case of the question through compression", "[integration]") {
  Responder responder(Table(), Soa());
  std::vector<std::string> theirs =
      Query(responder, {"dig", false}, {"+noall", "+answer", "ALL.Kdns.TEST.", "A"});
  CHECK(theirs == std::vector<std::string>{"ALL.Kdns.TEST. 30 IN A 192.0.2.1",
                                           "ALL.Kdns.TEST. 30 IN A 192.0.2.2"});
  CHECK(theirs == OurLines(responder.LastResponse(), Sections::kAnswerOnly));
}

TEST_CASE("a response too large for UDP is truncated at a whole RRset with TC", "[integration]") {
  Responder responder(Table(), Soa());
  SECTION("dig without EDNS gets TC and an empty answer, not a partial RRset") {
    std::string raw;
    auto lines =
        Query(responder, {"dig", false},
              {"+noedns", "+ignore", "+noall", "+comments", "+answer", "big.kdns.test."}, &raw);
    CHECK(Contains(HeaderFlags(raw), "tc"));
    CHECK(lines.empty());
    CHECK(responder.LastResponse().size() <= 512);
  }
  SECTION("kdig with a 1232-byte EDNS buffer gets TC too") {
    std::string raw;
    auto lines =
        Query(responder, {"kdig", false},
              {"+bufsize=1232", "+ignore", "+noall", "+header", "+answer", "big.kdns.test."}, &raw);
    CHECK(Contains(HeaderFlags(raw), "tc"));
    CHECK(lines.empty());
    CHECK(responder.LastResponse().size() <= 1232);
  }
  SECTION("over TCP the whole RRset comes back") {
    for (const auto& program : {"dig", "kdig"}) {
      auto lines = Query(responder, {program, true}, {"+noall", "+answer", "big.kdns.test."});
      CHECK(lines.size() == 200);
      CHECK(lines == OurLines(responder.LastResponse(), Sections::kAnswerOnly));
    }
  }
  SECTION("dig retries over TCP by itself after TC") {
    auto lines =
        Query(responder, {"dig", false}, {"+noedns", "+noall", "+answer", "big.kdns.test."});
    CHECK(lines.size() == 200);
  }
}

TEST_CASE("EDNS0 is answered with an OPT record only when the query had one", "[integration]") {
  Responder responder(Table(), Soa());
  std::string raw;
  Query(responder, {"dig", false}, {"+bufsize=4096", "+noall", "+comments", "all.kdns.test.", "A"},
        &raw);
  CHECK(raw.find("EDNS: version: 0, flags:; udp: 1232") != std::string::npos);

  Query(responder, {"dig", false}, {"+noedns", "+noall", "+comments", "all.kdns.test.", "A"}, &raw);
  CHECK(raw.find("EDNS:") == std::string::npos);
}

TEST_CASE("unknown names get NXDOMAIN with the SOA in the authority section", "[integration]") {
  Responder responder(Table(), Soa());
  std::string raw;
  auto lines = Query(responder, {"kdig", false},
                     {"+noall", "+header", "+answer", "+authority", "nope.kdns.test."}, &raw);
  CHECK(raw.find("NXDOMAIN") != std::string::npos);
  CHECK(lines == std::vector<std::string>{
                     "kdns.test. 60 IN SOA ns.dns.kdns.test. hostmaster.kdns.test. 1 28800 7200 "
                     "604800 60"});
}

TEST_CASE("reverse names from our helpers resolve with dig -x", "[integration]") {
  Responder responder(Table(), Soa());
  auto v4 = Query(responder, {"dig", false}, {"+noall", "+answer", "-x", "192.0.2.1"});
  CHECK(v4 == std::vector<std::string>{"1.2.0.192.in-addr.arpa. 30 IN PTR all.kdns.test."});
  auto v6 = Query(responder, {"dig", true}, {"+noall", "+answer", "-x", "2001:db8::1"});
  REQUIRE(v6.size() == 1);
  CHECK(v6[0] ==
        "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa. 30 IN PTR "
        "all.kdns.test.");
}

TEST_CASE("several queries on one kept-open TCP connection are all answered", "[integration]") {
  Responder responder(Table(), Soa());
  auto lines = Query(responder, {"dig", true},
                     {"+keepopen", "+noall", "+answer", "alias.kdns.test.", "CNAME",
                      "all.kdns.test.", "AAAA", "ns1.kdns.test.", "A"});
  CHECK(lines == std::vector<std::string>{"alias.kdns.test. 30 IN CNAME all.kdns.test.",
                                          "all.kdns.test. 30 IN AAAA 2001:db8::1"});
}

TEST_CASE("a query without a question is answered FORMERR with its ID", "[integration]") {
  Responder responder(Table(), Soa());
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(responder.udp_port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  const uint8_t no_question[12] = {0xbe, 0xef, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0};
  REQUIRE(sendto(fd, no_question, sizeof(no_question), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof(to)) == sizeof(no_question));
  uint8_t reply[512];
  ssize_t n = recv(fd, reply, sizeof(reply), 0);
  close(fd);
  REQUIRE(n >= 12);
  CHECK(reply[0] == 0xbe);
  CHECK(reply[1] == 0xef);
  CHECK((reply[2] & 0x80) != 0);  // QR
  CHECK((reply[3] & 0x0f) == 1);  // FORMERR
  CHECK(responder.formerr_count() == 1);
}

}  // namespace kdns::testing

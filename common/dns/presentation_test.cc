#include "common/dns/presentation.h"

#include <catch2/catch.hpp>

#include "common/dns/builder.h"
#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;
using testing::RR;

TEST_CASE("Records print the way dig prints them and parse back", "[dns][presentation]") {
  auto text =
      GENERATE(as<std::string>{}, "kubernetes.default.svc.cluster.local. 30 IN A 10.96.0.1",
               "kubernetes.default.svc.cluster.local. 30 IN AAAA fd00:10:96::1",
               "_https._tcp.k.default.svc.cluster.local. 30 IN SRV 10 100 443 "
               "k.default.svc.cluster.local.",
               "1.0.96.10.in-addr.arpa. 30 IN PTR kubernetes.default.svc.cluster.local.",
               "ext.ns.svc.cluster.local. 30 IN CNAME www.Example.com.",
               "cluster.local. 30 IN NS ns.dns.cluster.local.",
               "cluster.local. 60 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. "
               "1700000000 28800 7200 604800 60",
               "example.com. 300 IN MX 10 mail.example.com.",
               "dns-version.cluster.local. 30 IN TXT \"1.1.0\"", "hits.bind. 0 CH TXT \"42\"",
               "t.example. 1 IN TXT \"a \\\"quoted\\\" \\\\ word\" \"\" \"\\007bell\"",
               "h.example. 1 IN HINFO \"amd64\" \"linux\"", "d.example. 1 IN DNAME other.example.",
               "u.example. 1 IN TYPE65280 \\# 3 C0FFEE", "e.example. 1 IN TYPE65281 \\# 0",
               "c.example. 1 CH A \\# 4 0A000001", "Mixed.Case.Example. 1 IN A 1.2.3.4");
  ResourceRecord record;
  REQUIRE(RecordFromText(text, &record) == ParseError::kOk);
  CHECK(RecordToText(record) == text);
}

TEST_CASE("Record text accepts the generic rdata form for known types", "[dns][presentation]") {
  auto record = RR("a.example. 30 IN A \\# 4 0A000001");
  CHECK(std::get<RdataA>(record.rdata).address.ToString() == "10.0.0.1");
  CHECK(RecordToText(RR("a.example. 30 IN TXT \\# 3 02 6869")) == "a.example. 30 IN TXT \"hi\"");
}

TEST_CASE("Record text defaults TTL and class, in either order", "[dns][presentation]") {
  CHECK(RecordToText(RR("a.example A 10.0.0.1")) == "a.example. 0 IN A 10.0.0.1");
  CHECK(RecordToText(RR("a.example. IN 5 A 10.0.0.1")) == "a.example. 5 IN A 10.0.0.1");
  CHECK(RecordToText(RR("any.example. 5 ANY TYPE65280 \\# 0")) ==
        "any.example. 5 ANY TYPE65280 \\# 0");
  CHECK(RecordToText(RR("unquoted.example. 5 IN TXT hello world")) ==
        "unquoted.example. 5 IN TXT \"hello\" \"world\"");
}

TEST_CASE("Record text parsing rejects malformed input", "[dns][presentation]") {
  auto text = GENERATE(
      as<std::string>{}, "", "a.example.", "a.example. 30 IN", "a.example. 30 IN A",
      "a.example. 30 IN A 10.0.0", "a.example. 30 IN A ::1", "a.example. 30 IN AAAA 10.0.0.1",
      "a.example. 30 IN A 1.2.3.4 5.6.7.8", "a.example. 30 IN BOGUS x",
      "a.example. 30 IN TYPE65280 abc", "a.example. 30 IN TYPE65280 \\# 2 abcdef",
      "a.example. 30 IN TYPE65280 \\# 1 a", "a.example. 30 IN TXT \"unterminated",
      "a.example. 30 IN TXT", "a.example. 30 IN SRV 1 2 port t.",
      "a.example. 30 IN SRV 1 2 70000 t.", "a.example. 30 IN MX 1",
      "a.example. 30 IN SOA a. b. 1 2 3 4", "a..example. 30 IN A 10.0.0.1",
      "a.example. 30 IN OPT \\# 0", "a.example. 30 IN TXT \"" + std::string(256, 'x') + "\"",
      "a.example. 30 IN HINFO \"one\"", "a.example. 30 IN CNAME a..b.");
  ResourceRecord record;
  INFO(text);
  CHECK(RecordFromText(text, &record) != ParseError::kOk);
}

TEST_CASE("Character-strings escape quotes, backslashes and non-printables",
          "[dns][presentation]") {
  CHECK(CharacterStringToText("1.1.0") == "\"1.1.0\"");
  CHECK(CharacterStringToText("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(CharacterStringToText("a\\b") == "\"a\\\\b\"");
  CHECK(CharacterStringToText(std::string("\0\x7f\xff", 3)) == "\"\\000\\127\\255\"");
}

TEST_CASE("Messages print like dig's sections", "[dns][presentation]") {
  Message message;
  message.header.id = 7;
  message.header.qr = true;
  message.header.rd = true;
  message.header.rcode = Rcode::kNxDomain;
  message.questions.push_back({N("nope.cluster.local."), RrType::kA, RrClass::kIn});
  message.authorities.push_back(
      RR("cluster.local. 60 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 28800 7200 "
         "604800 60"));
  message.edns = Edns{};
  message.edns->dnssec_ok = true;
  std::string text = MessageToText(message);
  CHECK(text ==
        ";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 7\n"
        ";; flags: qr rd; QUERY: 1, ANSWER: 0, AUTHORITY: 1, ADDITIONAL: 1\n"
        "\n"
        ";; OPT PSEUDOSECTION:\n"
        "; EDNS: version: 0, flags: do; udp: 1232\n"
        "\n"
        ";; QUESTION SECTION:\n"
        ";nope.cluster.local. IN A\n"
        "\n"
        ";; AUTHORITY SECTION:\n"
        "cluster.local. 60 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 28800 7200 "
        "604800 60\n");
}

}  // namespace
}  // namespace kdns::dns

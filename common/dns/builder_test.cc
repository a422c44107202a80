#include "common/dns/builder.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/testing.h"

namespace kdns::dns {
namespace {

using testing::N;
using testing::RR;

Message Parse(std::span<const uint8_t> bytes) {
  Message message;
  REQUIRE(ParseMessage(bytes, &message) == ParseError::kOk);
  return message;
}

std::vector<uint8_t> Bytes(std::span<const uint8_t> span) { return {span.begin(), span.end()}; }

TEST_CASE("Builder compresses names as in the RFC 1035 section 4.1.4 example", "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  REQUIRE(builder.AddQuestion(N("F.ISI.ARPA."), RrType::kA, RrClass::kIn) == BuildError::kOk);
  REQUIRE(builder.AddRecord(Section::kAnswer, RR("FOO.F.ISI.ARPA. 1 IN A 10.0.0.1")) ==
          BuildError::kOk);
  REQUIRE(builder.AddRecord(Section::kAnswer, RR("ARPA. 1 IN A 10.0.0.2")) == BuildError::kOk);
  REQUIRE(builder.AddRecord(Section::kAnswer, RR(". 1 IN A 10.0.0.3")) == BuildError::kOk);
  auto bytes = Bytes(builder.Finish());

  // F.ISI.ARPA at 12 in full.
  const std::vector<uint8_t> first = {1, 'F', 3, 'I', 'S', 'I', 4, 'A', 'R', 'P', 'A', 0};
  CHECK(std::vector<uint8_t>(bytes.begin() + 12, bytes.begin() + 24) == first);
  // FOO.F.ISI.ARPA as FOO + pointer to 12, right after the question's type and class.
  const std::vector<uint8_t> second = {3, 'F', 'O', 'O', 0xC0, 12};
  CHECK(std::vector<uint8_t>(bytes.begin() + 28, bytes.begin() + 34) == second);
  // ARPA as a pointer to offset 18 (12 + 2 + 4), after FOO's 14-octet fixed part + rdata.
  const size_t arpa = 34 + 10 + 4;
  CHECK(bytes[arpa] == 0xC0);
  CHECK(bytes[arpa + 1] == 18);
  // The root as a single zero octet.
  CHECK(bytes[arpa + 2 + 14] == 0);

  Message message = Parse(bytes);
  REQUIRE(message.answers.size() == 3);
  CHECK(message.answers[0].owner.ToText() == "FOO.F.ISI.ARPA.");
  CHECK(message.answers[1].owner.ToText() == "ARPA.");
  CHECK(message.answers[2].owner.IsRoot());
  CHECK(bytes.size() == arpa + 2 + 14 + 1 + 14);
}

TEST_CASE("Builder compression makes a response smaller", "[dns][builder]") {
  std::vector<uint8_t> buffer(kMaxMessageSize);
  MessageBuilder builder(buffer);
  Name qname = N("_https._tcp.kubernetes.default.svc.cluster.local.");
  REQUIRE(builder.AddQuestion(qname, RrType::kSrv, RrClass::kIn) == BuildError::kOk);
  size_t uncompressed = builder.size();
  builder.BeginRrset(Section::kAnswer);
  for (int i = 0; i < 10; ++i) {
    Name target = *Name::FromLabels({"10-0-0-" + std::to_string(i)}, qname.StripLeft(2));
    builder.Add(qname, RrType::kSrv, RrClass::kIn, 30, RdataSrv{10, 10, 443, target});
    uncompressed += qname.wire_length() + 10 + 6 + target.wire_length();
  }
  REQUIRE(builder.EndRrset() == BuildError::kOk);
  builder.BeginRrset(Section::kAdditional);
  for (int i = 0; i < 10; ++i) {
    Name target = *Name::FromLabels({"10-0-0-" + std::to_string(i)}, qname.StripLeft(2));
    builder.Add(target, RrType::kA, RrClass::kIn, 30,
                RdataA{*IpAddress::Parse("10.0.0." + std::to_string(i))});
    uncompressed += target.wire_length() + 10 + 4;
  }
  REQUIRE(builder.EndRrset() == BuildError::kOk);
  auto bytes = builder.Finish();
  CHECK(bytes.size() < uncompressed / 2);
  Message message = Parse(bytes);
  CHECK(message.answers.size() == 10);
  CHECK(message.additionals.size() == 10);
  CHECK(std::get<RdataSrv>(message.answers[3].rdata).target.ToText() ==
        "10-0-0-3.kubernetes.default.svc.cluster.local.");
  CHECK(message.additionals[3].owner.ToText() == "10-0-0-3.kubernetes.default.svc.cluster.local.");
}

TEST_CASE("Builder compresses case-insensitively but writes literal labels as given",
          "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  REQUIRE(builder.AddQuestion(N("KuBe.Example."), RrType::kA, RrClass::kIn) == BuildError::kOk);
  REQUIRE(builder.AddRecord(Section::kAnswer, RR("kube.example. 30 IN A 10.0.0.1")) ==
          BuildError::kOk);
  REQUIRE(builder.AddRecord(Section::kAnswer, RR("WWW.kube.EXAMPLE. 30 IN A 10.0.0.2")) ==
          BuildError::kOk);
  auto bytes = builder.Finish();
  Message message = Parse(bytes);
  // The first answer is a bare pointer to the question, so it reads in the question's case.
  CHECK(message.answers[0].owner.ToText() == "KuBe.Example.");
  CHECK(message.answers[1].owner.ToText() == "WWW.KuBe.Example.");
  CHECK(bytes.size() == 12 + 14 + 4 + (2 + 14) + (4 + 2 + 14));
}

TEST_CASE("Builder compresses RFC 1035 rdata names but not SRV or DNAME targets",
          "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  const Name zone = N("cluster.local.");
  auto size_of = [&](const ResourceRecord& record) {
    MessageBuilder builder(buffer);
    REQUIRE(builder.AddQuestion(zone, RrType::kA, RrClass::kIn) == BuildError::kOk);
    size_t before = builder.size();
    REQUIRE(builder.AddRecord(Section::kAnswer, record) == BuildError::kOk);
    Message message = Parse(builder.Finish());
    CHECK(message.answers[0] == record);
    return builder.size() - before - 2 - 10;  // rdata size (owner is a pointer)
  };
  CHECK(size_of(RR("cluster.local. 30 IN CNAME cluster.local.")) == 2);
  CHECK(size_of(RR("cluster.local. 30 IN PTR x.cluster.local.")) == 4);
  CHECK(size_of(RR("cluster.local. 30 IN NS ns.cluster.local.")) == 5);
  CHECK(size_of(RR("cluster.local. 30 IN MX 1 cluster.local.")) == 4);
  CHECK(size_of(RR("cluster.local. 30 IN SOA ns.cluster.local. cluster.local. 1 2 3 4 5")) ==
        5 + 2 + 20);
  CHECK(size_of(RR("cluster.local. 30 IN SRV 1 2 3 cluster.local.")) == 6 + zone.wire_length());
  CHECK(size_of(RR("cluster.local. 30 IN DNAME cluster.local.")) == zone.wire_length());
}

TEST_CASE("Builder truncates at a whole RRset and sets TC", "[dns][builder]") {
  std::vector<uint8_t> buffer(kMaxMessageSize);
  MessageBuilder builder(buffer, 512);
  Name qname = N("headless.default.svc.cluster.local.");
  REQUIRE(builder.AddQuestion(qname, RrType::kA, RrClass::kIn) == BuildError::kOk);
  auto add_set = [&](Section section, int count, int base) {
    builder.BeginRrset(section);
    for (int i = 0; i < count; ++i) {
      builder.Add(
          qname, RrType::kA, RrClass::kIn, 30,
          RdataA{*IpAddress::Parse("10.1." + std::to_string(base) + "." + std::to_string(i))});
    }
    return builder.EndRrset();
  };
  // Each A record takes 16 octets after the first owner pointer: 2 + 10 + 4.
  CHECK(add_set(Section::kAnswer, 10, 1) == BuildError::kOk);
  CHECK(add_set(Section::kAnswer, 25, 2) == BuildError::kNoSpace);  // 400 more: too many
  CHECK(builder.truncated());
  CHECK(add_set(Section::kAnswer, 1, 3) == BuildError::kTruncated);  // would fit, but no
  CHECK(add_set(Section::kAuthority, 1, 4) == BuildError::kTruncated);
  CHECK(add_set(Section::kAdditional, 1, 5) == BuildError::kTruncated);
  auto bytes = builder.Finish();
  CHECK(bytes.size() <= 512);
  Message message = Parse(bytes);
  CHECK(message.header.tc);
  CHECK(message.header.ancount == 10);
  CHECK(message.answers.size() == 10);
  CHECK(message.additionals.empty());
}

TEST_CASE("Builder omits an additional RRset that does not fit, without TC", "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  REQUIRE(builder.AddQuestion(N("_http._tcp.web.ns.svc.cluster.local."), RrType::kSrv,
                              RrClass::kIn) == BuildError::kOk);
  REQUIRE(builder.AddRecord(Section::kAnswer,
                            RR("_http._tcp.web.ns.svc.cluster.local. 30 IN SRV 10 100 80 "
                               "web.ns.svc.cluster.local.")) == BuildError::kOk);
  std::vector<ResourceRecord> big;
  big.reserve(40);
  for (int i = 0; i < 40; ++i) {
    big.push_back(RR("web.ns.svc.cluster.local. 30 IN AAAA 2001:db8::" + std::to_string(i)));
  }
  CHECK(builder.AddRrset(Section::kAdditional, big) == BuildError::kNoSpace);
  CHECK_FALSE(builder.truncated());
  CHECK(builder.AddRecord(Section::kAdditional, RR("web.ns.svc.cluster.local. 30 IN A 10.0.0.1")) ==
        BuildError::kOk);
  Message message = Parse(builder.Finish());
  CHECK_FALSE(message.header.tc);
  CHECK(message.answers.size() == 1);
  REQUIRE(message.additionals.size() == 1);
  CHECK(message.additionals[0].type == RrType::kA);
}

TEST_CASE("Builder reserves space for the OPT record", "[dns][builder]") {
  std::vector<uint8_t> buffer(kMaxMessageSize);
  const uint8_t options[] = {0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8};
  EdnsView edns;
  edns.options = options;
  auto limit = GENERATE(100, 200, 512, 513, 1232);
  MessageBuilder builder(buffer, static_cast<size_t>(limit));
  REQUIRE(builder.SetEdns(edns) == BuildError::kOk);
  REQUIRE(builder.AddQuestion(N("a.example."), RrType::kA, RrClass::kIn) == BuildError::kOk);
  int added = 0;
  while (builder.AddRecord(Section::kAnswer, RR("a.example. 30 IN A 10.0.0.1")) ==
         BuildError::kOk) {
    ++added;
  }
  CHECK(builder.truncated());
  auto bytes = builder.Finish();
  INFO("limit " << limit << " size " << bytes.size());
  CHECK(bytes.size() <= static_cast<size_t>(limit));
  CHECK(bytes.size() + 16 > static_cast<size_t>(limit));  // no room for one more record
  Message message = Parse(bytes);
  CHECK(message.answers.size() == static_cast<size_t>(added));
  REQUIRE(message.edns.has_value());
  CHECK(message.edns->options == std::vector<uint8_t>(std::begin(options), std::end(options)));
  CHECK(message.header.arcount == 1);
}

TEST_CASE("Builder refuses EDNS when the OPT record no longer fits", "[dns][builder]") {
  std::vector<uint8_t> buffer(30);
  MessageBuilder builder(buffer);
  REQUIRE(builder.AddQuestion(N("abcdefghij."), RrType::kA, RrClass::kIn) == BuildError::kOk);
  CHECK(builder.SetEdns(EdnsView{}) == BuildError::kNoSpace);  // 12 + 16 + 11 > 30
  Message message = Parse(builder.Finish());
  CHECK_FALSE(message.edns.has_value());
}

TEST_CASE("Builder splits an extended rcode between header and OPT", "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  builder.header().rcode = Rcode::kBadVers;
  REQUIRE(builder.SetEdns(EdnsView{}) == BuildError::kOk);
  Message message = Parse(builder.Finish());
  CHECK(message.header.rcode == Rcode::kNoError);
  CHECK(message.edns->extended_rcode == 1);
  CHECK(message.rcode() == Rcode::kBadVers);
}

TEST_CASE("Builder starts a response from a query", "[dns][builder]") {
  std::vector<uint8_t> query_buffer(512);
  MessageBuilder query_builder(query_buffer);
  query_builder.header().id = 0xABCD;
  query_builder.header().rd = true;
  query_builder.header().cd = true;
  REQUIRE(query_builder.AddQuestion(N("MiXeD.Example."), RrType::kTxt, RrClass::kCh) ==
          BuildError::kOk);
  Query query;
  REQUIRE(ParseQuery(query_builder.Finish(), &query) == ParseError::kOk);

  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  REQUIRE(builder.StartResponse(query) == BuildError::kOk);
  builder.header().aa = true;
  REQUIRE(builder.AddRecord(Section::kAnswer, RR("mixed.example. 0 CH TXT \"42\"")) ==
          BuildError::kOk);
  Message message = Parse(builder.Finish());
  CHECK(message.header.id == 0xABCD);
  CHECK(message.header.qr);
  CHECK(message.header.rd);
  CHECK(message.header.cd);
  CHECK(message.header.aa);
  CHECK_FALSE(message.header.ra);
  REQUIRE(message.questions.size() == 1);
  CHECK(message.questions[0].name.ToText() == "MiXeD.Example.");
  CHECK(message.questions[0].type == RrType::kTxt);
  CHECK(message.questions[0].cls == RrClass::kCh);
  CHECK(message.answers[0].owner.ToText() == "MiXeD.Example.");
}

TEST_CASE("Builder rejects rdata that does not match its type and rolls the set back",
          "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  Name owner = N("x.example.");
  auto v4 = *IpAddress::Parse("10.0.0.1");
  SECTION("wrong struct") {
    CHECK(builder.AddRecord(Section::kAnswer, {owner, RrType::kAaaa, RrClass::kIn, 30,
                                               RdataA{v4}}) == BuildError::kBadRdata);
  }
  SECTION("a TXT string over 255 octets, or no string at all") {
    CHECK(builder.AddRecord(Section::kAnswer, {owner, RrType::kTxt, RrClass::kIn, 30,
                                               RdataTxt{{std::string(256, 'a')}}}) ==
          BuildError::kBadRdata);
    CHECK(builder.AddRecord(Section::kAnswer, {owner, RrType::kTxt, RrClass::kIn, 30,
                                               RdataTxt{}}) == BuildError::kBadRdata);
  }
  SECTION("OPT as an ordinary record") {
    CHECK(builder.AddRecord(Section::kAdditional, {owner, RrType::kOpt, RrClass::kIn, 0,
                                                   RdataOpaque{}}) == BuildError::kBadRdata);
  }
  SECTION("the bad record of a set drops the good ones") {
    builder.BeginRrset(Section::kAnswer);
    builder.Add(owner, RrType::kA, RrClass::kIn, 30, RdataA{v4});
    builder.Add(owner, RrType::kA, RrClass::kIn, 30, RdataAaaa{*IpAddress::Parse("::1")});
    CHECK(builder.EndRrset() == BuildError::kBadRdata);
  }
  CHECK(builder.size() == kHeaderSize);
  CHECK(builder.count(Section::kAnswer) == 0);
  CHECK_FALSE(builder.truncated());
}

TEST_CASE("Builder enforces section order", "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  auto record = RR("a. 1 IN A 10.0.0.1");
  REQUIRE(builder.AddRecord(Section::kAdditional, record) == BuildError::kOk);
  CHECK(builder.AddRecord(Section::kAnswer, record) == BuildError::kBadOrder);
  CHECK(builder.AddQuestion(N("a."), RrType::kA, RrClass::kIn) == BuildError::kBadOrder);
  CHECK(builder.AddRecord(Section::kQuestion, record) == BuildError::kBadOrder);
  CHECK(builder.EndRrset() == BuildError::kBadOrder);  // none open
  builder.Add(record);                                 // outside a set
  builder.BeginRrset(Section::kAdditional);
  CHECK(builder.EndRrset() == BuildError::kBadOrder);
  Message message = Parse(builder.Finish());
  CHECK(message.additionals.size() == 1);
}

TEST_CASE("Builder reports a question that does not fit", "[dns][builder]") {
  std::vector<uint8_t> buffer(20);
  MessageBuilder builder(buffer);
  CHECK(builder.AddQuestion(N("too-long-for-twenty.example."), RrType::kA, RrClass::kIn) ==
        BuildError::kNoSpace);
  CHECK(builder.Finish().size() == kHeaderSize);
  std::vector<uint8_t> tiny(5);
  MessageBuilder tiny_builder(tiny);
  CHECK(tiny_builder.AddQuestion(N("a."), RrType::kA, RrClass::kIn) == BuildError::kNoSpace);
  CHECK(tiny_builder.Finish().empty());
}

TEST_CASE("Builder handles TCP-sized messages past the pointer range", "[dns][builder]") {
  Message message;
  message.header.qr = true;
  message.questions.push_back({N("big.example."), RrType::kTxt, RrClass::kIn});
  for (int i = 0; i < 3000; ++i) {
    message.answers.push_back(RR("host-" + std::to_string(i) + ".big.example. 30 IN TXT \"" +
                                 std::string(i % 7, 'x') + "\""));
  }
  std::vector<uint8_t> bytes;
  REQUIRE(BuildMessage(message, kMaxMessageSize, &bytes) == BuildError::kOk);
  CHECK(bytes.size() > 0x4000);
  Message parsed = Parse(bytes);
  CHECK(parsed.header.tc == (parsed.answers.size() < message.answers.size()));
  for (size_t i = 0; i < parsed.answers.size(); ++i) {
    REQUIRE(parsed.answers[i].owner.IdenticalTo(message.answers[i].owner));
  }
}

TEST_CASE("BuildMessage round-trips a message and groups RRsets for truncation", "[dns][builder]") {
  Message message;
  message.header.id = 99;
  message.header.qr = true;
  message.header.aa = true;
  message.questions.push_back({N("web.ns.svc.cluster.local."), RrType::kA, RrClass::kIn});
  for (int i = 0; i < 20; ++i) {
    message.answers.push_back(RR("web.ns.svc.cluster.local. 30 IN A 10.0.1." + std::to_string(i)));
  }
  message.authorities.push_back(
      RR("cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 28800 "
         "7200 604800 60"));
  message.edns = Edns{};
  std::vector<uint8_t> bytes;
  REQUIRE(BuildMessage(message, kMaxMessageSize, &bytes) == BuildError::kOk);
  Message parsed = Parse(bytes);
  parsed.header.ancount = parsed.header.nscount = parsed.header.arcount = parsed.header.qdcount = 0;
  CHECK(parsed == message);

  // 12 + 30 + 20 * 16 = 362: the answer set fits in 400 but the SOA does not.
  REQUIRE(BuildMessage(message, 400, &bytes) == BuildError::kOk);
  parsed = Parse(bytes);
  CHECK(parsed.header.tc);
  CHECK(parsed.answers.size() == 20);
  CHECK(parsed.authorities.empty());
  REQUIRE(BuildMessage(message, 300, &bytes) == BuildError::kOk);
  parsed = Parse(bytes);
  CHECK(parsed.header.tc);
  CHECK(parsed.answers.empty());  // the set goes as a whole
  CHECK(parsed.edns.has_value());
}

}  // namespace
}  // namespace kdns::dns

namespace kdns::dns {
namespace {

// Builds the same message twice: `general` writes the records through Add, `direct`
// through the method under test; both start with `question`.
template <class General, class Direct>
void RequireSameBytes(const Name& question, size_t limit, General general, Direct direct) {
  std::vector<uint8_t> a(limit), b(limit);
  MessageBuilder one(a, limit), two(b, limit);
  REQUIRE(one.AddQuestion(question, RrType::kA, RrClass::kIn) == BuildError::kOk);
  REQUIRE(two.AddQuestion(question, RrType::kA, RrClass::kIn) == BuildError::kOk);
  general(one);
  direct(two);
  CHECK(one.truncated() == two.truncated());
  CHECK(Bytes(one.Finish()) == Bytes(two.Finish()));
}

TEST_CASE("Builder writes an owner equal to the question as a pointer to it, in any case",
          "[dns][builder]") {
  std::vector<uint8_t> buffer(512);
  MessageBuilder builder(buffer);
  REQUIRE(builder.AddQuestion(N("Svc.NS.svc.cluster.local."), RrType::kA, RrClass::kIn) ==
          BuildError::kOk);
  // A name written before with the same labels but not the question: no pointer to 12.
  REQUIRE(builder.AddRecord(Section::kAnswer, RR("x.svc.ns.svc.cluster.local. 1 IN A 10.0.0.1")) ==
          BuildError::kOk);
  REQUIRE(builder.AddRecord(Section::kAnswer, RR("svc.ns.svc.CLUSTER.local. 1 IN A 10.0.0.2")) ==
          BuildError::kOk);
  auto bytes = Bytes(builder.Finish());
  const size_t second = bytes.size() - 16;  // pointer (2), fixed (10), address (4)
  CHECK(bytes[second] == 0xC0);
  CHECK(bytes[second + 1] == 12);
  Message message = Parse(bytes);
  REQUIRE(message.answers.size() == 2);
  CHECK(message.answers[1].owner.ToText() == "Svc.NS.svc.cluster.local.");
}

TEST_CASE("Builder AddAddress writes what Add writes for A and AAAA", "[dns][builder]") {
  const IpAddress v4 = *IpAddress::Parse("10.96.0.1");
  const IpAddress v6 = *IpAddress::Parse("fd00:10:96::1");
  for (const char* text : {"svc.ns.svc.cluster.local.", "SVC.ns.svc.cluster.local.", "."}) {
    const Name question = N(text);
    for (const char* owner_text : {"svc.ns.svc.cluster.local.", "other.ns.svc.cluster.local.",
                                   "a.svc.ns.svc.cluster.local.", "example.com."}) {
      const Name owner = N(owner_text);
      // 64 bytes leave room for the question and some records only: both truncate alike.
      for (size_t limit : {size_t{512}, size_t{64}, size_t{kHeaderSize + 40}}) {
        INFO(text << " " << owner_text << " limit " << limit);
        RequireSameBytes(
            question, limit,
            [&](MessageBuilder& b) {
              for (const IpAddress& ip : {v4, v6}) {
                b.BeginRrset(Section::kAnswer);
                for (int i = 0; i < 3; ++i) {
                  if (ip.is_v4()) {
                    b.Add(owner, RrType::kA, RrClass::kIn, 30, RdataA{ip});
                  } else {
                    b.Add(owner, RrType::kAaaa, RrClass::kIn, 30, RdataAaaa{ip});
                  }
                }
                (void)b.EndRrset();
              }
            },
            [&](MessageBuilder& b) {
              for (const IpAddress& ip : {v4, v6}) {
                b.BeginRrset(Section::kAnswer);
                for (int i = 0; i < 3; ++i) b.AddAddress(owner, 30, ip);
                (void)b.EndRrset();
              }
            });
      }
    }
  }
}

TEST_CASE("Builder AddEncodedRecord adds a record in wire form as an RRset of its own",
          "[dns][builder]") {
  // The record AddRecord writes for this owner, taken from one message and added to another.
  const ResourceRecord record =
      RR("cluster.local. 60 IN SOA ns.dns.cluster.local. "
         "hostmaster.cluster.local. 7 28800 7200 604800 60");
  std::vector<uint8_t> scratch(512);
  MessageBuilder source(scratch);
  REQUIRE(source.AddQuestion(N("x.cluster.local."), RrType::kA, RrClass::kIn) == BuildError::kOk);
  const size_t start = source.size();
  REQUIRE(source.AddRecord(Section::kAuthority, record) == BuildError::kOk);
  const std::vector<uint8_t> encoded(scratch.begin() + static_cast<ptrdiff_t>(start),
                                     scratch.begin() + static_cast<ptrdiff_t>(source.size()));

  SECTION("it is written as given and counted") {
    RequireSameBytes(
        N("x.cluster.local."), 512,
        [&](MessageBuilder& b) {
          REQUIRE(b.AddRecord(Section::kAuthority, record) == BuildError::kOk);
        },
        [&](MessageBuilder& b) {
          REQUIRE(b.AddEncodedRecord(Section::kAuthority, encoded) == BuildError::kOk);
        });
  }
  SECTION("one that does not fit sets TC, as AddRecord does") {
    const size_t limit = start + encoded.size() - 1;
    RequireSameBytes(
        N("x.cluster.local."), limit,
        [&](MessageBuilder& b) {
          CHECK(b.AddRecord(Section::kAuthority, record) == BuildError::kNoSpace);
        },
        [&](MessageBuilder& b) {
          CHECK(b.AddEncodedRecord(Section::kAuthority, encoded) == BuildError::kNoSpace);
        });
  }
  SECTION("sections out of order are refused") {
    std::vector<uint8_t> buffer(512);
    MessageBuilder builder(buffer);
    REQUIRE(builder.AddQuestion(N("x.cluster.local."), RrType::kA, RrClass::kIn) ==
            BuildError::kOk);
    REQUIRE(builder.AddEncodedRecord(Section::kAdditional, encoded) == BuildError::kOk);
    CHECK(builder.AddEncodedRecord(Section::kAuthority, encoded) == BuildError::kBadOrder);
    CHECK(builder.count(Section::kAuthority) == 0);
  }
}

}  // namespace
}  // namespace kdns::dns

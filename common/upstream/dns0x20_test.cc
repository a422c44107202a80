#include "common/upstream/dns0x20.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/testing.h"
#include "test/support/fake_dns_server.h"

namespace kdns::upstream {
namespace {

using dns::testing::N;
using dns::testing::Parse;

TEST_CASE("The 0x20 mode is auto, on or off, and nothing else", "[upstream][0x20]") {
  Dns0x20 mode = Dns0x20::kOff;
  for (Dns0x20 each : {Dns0x20::kOff, Dns0x20::kAuto, Dns0x20::kOn}) {
    REQUIRE(ParseDns0x20(Dns0x20Name(each), &mode));
    CHECK(mode == each);
  }
  mode = Dns0x20::kAuto;
  for (const char* bad : {"", "yes", "true", "AUTO", "1"}) {
    CHECK_FALSE(ParseDns0x20(bad, &mode));
    CHECK(mode == Dns0x20::kAuto);
  }
}

TEST_CASE("Random case changes only the case of letters, and each letter's at random",
          "[upstream][0x20]") {
  SecureRandom random;
  const dns::Name name = N("www-1.Example.COM.");
  std::set<std::string> spellings;
  for (int i = 0; i < 64; ++i) {
    const dns::Name sent = Randomize0x20(name, random);
    CHECK(sent == name);  // the same name (RFC 4343)
    CHECK(sent.wire_length() == name.wire_length());
    CHECK(sent.label(0).substr(3) == "-1");  // no letter: untouched
    spellings.insert(sent.ToText());
  }
  // 13 letters: 8192 spellings; 64 draws all alike would be a broken generator.
  CHECK(spellings.size() > 32);
  CHECK(Randomize0x20(N("1.2.3.4.in-addr.arpa."), random) == N("1.2.3.4.in-addr.arpa."));
  CHECK(Randomize0x20(dns::Name::Root(), random).IsRoot());
}

// A reply as a server that does not compress writes it: the owners spelt out in full.
std::vector<uint8_t> UncompressedReply(const dns::Name& question, const dns::Name& owner,
                                       const dns::Name& authority) {
  std::vector<uint8_t> bytes = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 1, 0, 0};
  auto name = [&](const dns::Name& n) {
    bytes.insert(bytes.end(), n.wire().begin(), n.wire().end());
  };
  name(question);
  bytes.insert(bytes.end(), {0, 1, 0, 1});
  name(owner);
  bytes.insert(bytes.end(), {0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1});
  name(authority);  // an NS record: type 2, rdata "ns" + a pointer to the question's parent
  const uint8_t parent = static_cast<uint8_t>(12 + 1 + question.label(0).size());
  bytes.insert(bytes.end(), {0, 2, 0, 1, 0, 0, 0, 60, 0, 5, 2, 'n', 's', 0xC0, parent});
  return bytes;
}

TEST_CASE("The client's spelling goes back into the question and the owners spelt as sent",
          "[upstream][0x20]") {
  const dns::Name asked = N("www.Example.com.");
  const dns::Name sent = N("wWw.eXAmple.cOm.");

  SECTION("compressed: the question, and the pointers to it follow") {
    dns::Message query;
    query.header.id = 7;
    query.questions.push_back({sent, dns::RrType::kA, dns::RrClass::kIn});
    std::vector<uint8_t> bytes = kdns::testing::AnswerBytes(query, kdns::testing::A("192.0.2.1"));
    Restore0x20(bytes, sent, asked);
    const dns::Message reply = Parse(bytes);
    CHECK(reply.questions[0].name.IdenticalTo(asked));
    REQUIRE(reply.answers.size() == 1);
    CHECK(reply.answers[0].owner.IdenticalTo(asked));
  }
  SECTION("uncompressed owners: the name and its ancestors as sent; others are left alone") {
    std::vector<uint8_t> bytes = UncompressedReply(sent, sent, sent.Parent());
    Restore0x20(bytes, sent, asked);
    dns::Message reply = Parse(bytes);
    CHECK(reply.questions[0].name.IdenticalTo(asked));
    CHECK(reply.answers[0].owner.IdenticalTo(asked));
    CHECK(reply.authorities[0].owner.IdenticalTo(asked.Parent()));

    // An owner in yet another case is not ours to change.
    bytes = UncompressedReply(sent, N("WWW.EXAMPLE.COM."), sent.Parent());
    Restore0x20(bytes, sent, asked);
    reply = Parse(bytes);
    CHECK(reply.answers[0].owner.IdenticalTo(N("WWW.EXAMPLE.COM.")));
  }
  SECTION("the parsed reply, as kubedns decodes it") {
    dns::Message reply = Parse(UncompressedReply(sent, sent, sent.Parent()));
    Restore0x20(&reply, sent, asked);
    CHECK(reply.questions[0].name.IdenticalTo(asked));
    CHECK(reply.answers[0].owner.IdenticalTo(asked));
    CHECK(reply.authorities[0].owner.IdenticalTo(asked.Parent()));
  }
  SECTION("a malformed reply is left as far as it goes, never read past its end") {
    std::vector<uint8_t> bytes = UncompressedReply(sent, sent, sent.Parent());
    for (size_t size = 0; size < bytes.size(); ++size) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(size));
      Restore0x20(cut, sent, asked);  // ASan would see a read past the end
    }
    std::vector<uint8_t> loop = bytes;
    loop[12] = 0xC0;  // a question that points at itself
    loop[13] = 12;
    Restore0x20(loop, sent, asked);
    CHECK(loop[12] == 0xC0);
  }
}

TEST_CASE("An upstream that echoes the case keeps 0x20; a wrong case from it is a spoof",
          "[upstream][0x20]") {
  Echo0x20 echo({Dns0x20::kAuto, 3, 1000});
  CHECK(echo.Use(0));
  echo.OnEchoed(N("wWw.example."));
  CHECK(echo.echoes());
  CHECK(echo.OnWrongCase(1) == Echo0x20::Verdict::kDrop);
  CHECK(echo.OnWrongCase(2) == Echo0x20::Verdict::kDrop);
  echo.OnEchoed(N("WWW.example."));  // the real reply came: the count starts again
  CHECK(echo.OnWrongCase(3) == Echo0x20::Verdict::kDrop);
  CHECK(echo.OnWrongCase(4) == Echo0x20::Verdict::kDrop);
  CHECK(echo.Use(5));
  // Three in a row with no real reply between: it stopped echoing (or a determined spoofer).
  CHECK(echo.OnWrongCase(6) == Echo0x20::Verdict::kFallBack);
  CHECK_FALSE(echo.Use(7));
}

TEST_CASE("An upstream that lower-cases gets the plain name, and is asked again later",
          "[upstream][0x20]") {
  Echo0x20 echo({Dns0x20::kAuto, 3, 1000});
  REQUIRE(echo.Use(0));
  // A lower-case spelling echoed proves nothing: a server that lower-cases returns it too.
  echo.OnEchoed(N("www.example."));
  CHECK_FALSE(echo.echoes());
  CHECK(echo.OnWrongCase(1) == Echo0x20::Verdict::kRetryPlain);
  CHECK(echo.OnWrongCase(2) == Echo0x20::Verdict::kRetryPlain);
  CHECK(echo.OnWrongCase(3) == Echo0x20::Verdict::kFallBack);
  CHECK(echo.fallen_back());
  CHECK_FALSE(echo.Use(500));
  // A late reply to a query sent before the fallback: asked again plainly, not counted.
  CHECK(echo.OnWrongCase(600) == Echo0x20::Verdict::kRetryPlain);
  // Re-probed once reprobe_after_ms has passed.
  CHECK(echo.Use(1003));
  CHECK_FALSE(echo.fallen_back());
  CHECK(echo.OnWrongCase(1004) == Echo0x20::Verdict::kRetryPlain);
}

TEST_CASE("0x20 on never falls back; off never randomises", "[upstream][0x20]") {
  Echo0x20 on({Dns0x20::kOn, 3, 1000});
  for (int i = 0; i < 10; ++i)
    CHECK(on.OnWrongCase(static_cast<uint64_t>(i)) == Echo0x20::Verdict::kDrop);
  CHECK(on.Use(10));
  Echo0x20 off({Dns0x20::kOff, 3, 1000});
  CHECK_FALSE(off.Use(0));
}

}  // namespace
}  // namespace kdns::upstream

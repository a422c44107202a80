#include "frontend-cache/local_answers.h"

#include <catch2/catch.hpp>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/testing.h"

namespace kdns::frontend {
namespace {

using dns::testing::N;
using Kind = LocalAnswer::Kind;
using Reason = LocalAnswer::Reason;

IpAddress Ip(std::string_view text) { return *IpAddress::Parse(text); }

LocalAnswers Build(std::vector<std::string_view> args, std::string_view hosts_text = "") {
  Options options;
  std::vector<std::string> rest;
  std::string error;
  REQUIRE(ParseOptions(args, &options, &rest, &error));
  return LocalAnswers(LocalAnswersConfig::From(options, ParseHostsFile(hosts_text).entries));
}

// Under the default route (no --server for the name).
LocalAnswer Ask(const LocalAnswers& local, std::string_view name, dns::RrType type) {
  return local.Lookup(N(name), type, dns::Name::Root(), /*default_route=*/true);
}

TEST_CASE("nothing configured answers nothing", "[frontend][local]") {
  LocalAnswers local;
  CHECK(local.empty());
  CHECK(Ask(local, "a.test", dns::RrType::kA).kind == Kind::kNone);
}

TEST_CASE("--address answers its family for the domain and every name below it",
          "[frontend][local]") {
  LocalAnswers local = Build({"--address=/ads.test/192.0.2.1", "--address=/ads.test/192.0.2.2",
                              "--address=/v6.test/2001:db8::1", "--address=/null.test/#"});
  LocalAnswer a = Ask(local, "x.y.ADS.test", dns::RrType::kA);
  CHECK(a.kind == Kind::kRecords);
  CHECK(a.reason == Reason::kAddress);
  CHECK(a.aa);
  REQUIRE(a.addresses != nullptr);
  CHECK(*a.addresses == std::vector<IpAddress>{Ip("192.0.2.1"), Ip("192.0.2.2")});
  // The other family and other types are forwarded (dnsmasq 2.90).
  CHECK(Ask(local, "ads.test", dns::RrType::kAaaa).kind == Kind::kNone);
  CHECK(Ask(local, "ads.test", dns::RrType::kMx).kind == Kind::kNone);
  CHECK(Ask(local, "v6.test", dns::RrType::kA).kind == Kind::kNone);
  CHECK(Ask(local, "v6.test", dns::RrType::kAaaa).kind == Kind::kRecords);
  CHECK(Ask(local, "null.test", dns::RrType::kA).kind == Kind::kRecords);
  CHECK(Ask(local, "null.test", dns::RrType::kAaaa).kind == Kind::kRecords);
  CHECK(Ask(local, "notads.test", dns::RrType::kA).kind == Kind::kNone);
}

TEST_CASE("a more specific --server route wins over an --address rule", "[frontend][local]") {
  LocalAnswers local = Build({"--address=/example.test/192.0.2.1", "--address=/#/192.0.2.9"});
  // --server=/sub.example.test/... is more specific than the rule: forwarded.
  CHECK(
      local.Lookup(N("www.sub.example.test"), dns::RrType::kA, N("sub.example.test"), false).kind ==
      Kind::kNone);
  // --server=/test/... is less specific: the rule answers.
  CHECK(local.Lookup(N("www.example.test"), dns::RrType::kA, N("test"), false).kind ==
        Kind::kRecords);
  // /#/ answers only names no --server route takes.
  CHECK(Ask(local, "elsewhere.org", dns::RrType::kA).kind == Kind::kRecords);
  CHECK(local.Lookup(N("a.routed.org"), dns::RrType::kA, N("routed.org"), false).kind ==
        Kind::kNone);
}

TEST_CASE("hosts files answer A, AAAA, ANY and PTR for what they list", "[frontend][local]") {
  LocalAnswers local = Build({"--local-ttl=7"},
                             "192.0.2.77 h1.example.test h1\n"
                             "2001:db8::77 h1.example.test\n"
                             "10.9.9.9 v4only.example.test\n");
  LocalAnswer a = Ask(local, "H1.example.test", dns::RrType::kA);
  CHECK(a.kind == Kind::kRecords);
  CHECK(a.reason == Reason::kHosts);
  CHECK(Ask(local, "h1", dns::RrType::kAaaa).kind == Kind::kNone);  // h1 has no AAAA line
  CHECK(Ask(local, "h1.example.test", dns::RrType::kAaaa).kind == Kind::kRecords);
  CHECK(Ask(local, "h1.example.test", dns::RrType::kAny).kind == Kind::kRecords);
  // Other types, and a family the name has no address of, are forwarded.
  CHECK(Ask(local, "h1.example.test", dns::RrType::kMx).kind == Kind::kNone);
  CHECK(Ask(local, "v4only.example.test", dns::RrType::kAaaa).kind == Kind::kNone);
  // Exact names only.
  CHECK(Ask(local, "sub.h1.example.test", dns::RrType::kA).kind == Kind::kNone);
  LocalAnswer ptr = Ask(local, "77.2.0.192.in-addr.arpa", dns::RrType::kPtr);
  CHECK(ptr.kind == Kind::kRecords);
  REQUIRE(ptr.ptr_targets != nullptr);
  CHECK(*ptr.ptr_targets == std::vector<dns::Name>{N("h1.example.test")});
  CHECK(Ask(local, "78.2.0.192.in-addr.arpa", dns::RrType::kPtr).kind == Kind::kNone);
}

TEST_CASE("local answers are written with AA, the local TTL and the query's spelling",
          "[frontend][local]") {
  LocalAnswers local = Build({"--local-ttl=7"},
                             "192.0.2.77 h1.example.test\n"
                             "2001:db8::77 h1.example.test\n");
  dns::Query query;
  query.header.id = 99;
  query.header.rd = true;
  query.qname = N("H1.Example.TEST");
  query.qtype = dns::RrType::kAny;
  query.qclass = dns::RrClass::kIn;
  std::vector<uint8_t> out(512);
  const size_t size =
      local.Write(Ask(local, "h1.example.test", dns::RrType::kAny), query, out, 512);
  REQUIRE(size > 0);
  dns::Message message;
  REQUIRE(dns::ParseMessage(std::span<const uint8_t>(out.data(), size), &message) ==
          dns::ParseError::kOk);
  CHECK(message.header.id == 99);
  CHECK(message.header.aa);
  CHECK(message.header.ra);
  CHECK(message.rcode() == dns::Rcode::kNoError);
  REQUIRE(message.answers.size() == 2);
  CHECK(message.answers[0].owner.IdenticalTo(N("H1.Example.TEST")));
  CHECK(message.answers[0].type == dns::RrType::kA);
  CHECK(message.answers[0].ttl_s == 7);
  CHECK(message.answers[1].type == dns::RrType::kAaaa);
  SECTION("an NXDOMAIN has no records") {
    LocalAnswers nx = Build({"--bogus-priv"});
    query.qname = N("1.1.168.192.in-addr.arpa");
    query.qtype = dns::RrType::kPtr;
    const size_t nx_size =
        nx.Write(Ask(nx, "1.1.168.192.in-addr.arpa", dns::RrType::kPtr), query, out, 512);
    REQUIRE(dns::ParseMessage(std::span<const uint8_t>(out.data(), nx_size), &message) ==
            dns::ParseError::kOk);
    CHECK(message.rcode() == dns::Rcode::kNxDomain);
    CHECK(message.header.aa);
    CHECK(message.answers.empty());
  }
}

TEST_CASE("--filter-AAAA answers every AAAA query NODATA, hosts files aside", "[frontend][local]") {
  LocalAnswers local = Build({"--filter-AAAA"}, "2001:db8::77 h1.example.test\n");
  LocalAnswer aaaa = Ask(local, "www.example.test", dns::RrType::kAaaa);
  CHECK(aaaa.kind == Kind::kNoData);
  CHECK(aaaa.reason == Reason::kFilterAaaa);
  CHECK(Ask(local, "www.example.test", dns::RrType::kA).kind == Kind::kNone);
  CHECK(Ask(local, "h1.example.test", dns::RrType::kAaaa).kind == Kind::kRecords);
}

TEST_CASE("--domain-needed answers A and AAAA for one-label names itself", "[frontend][local]") {
  LocalAnswers local = Build({"--domain-needed"}, "10.1.2.3 plainhost\n");
  CHECK(Ask(local, "nothere", dns::RrType::kA).kind == Kind::kNxDomain);
  CHECK_FALSE(Ask(local, "nothere", dns::RrType::kA).aa);
  CHECK(Ask(local, "nothere", dns::RrType::kAaaa).kind == Kind::kNxDomain);
  CHECK(Ask(local, "nothere", dns::RrType::kMx).kind == Kind::kNone);
  CHECK(Ask(local, "there.test", dns::RrType::kA).kind == Kind::kNone);
  CHECK(Ask(local, "plainhost", dns::RrType::kA).kind == Kind::kRecords);
  // Known from a hosts file without an address of that family: NODATA.
  CHECK(Ask(local, "plainhost", dns::RrType::kAaaa).kind == Kind::kNoData);
}

TEST_CASE("--bogus-priv answers private reverse names NXDOMAIN unless a --server takes them",
          "[frontend][local]") {
  LocalAnswers local = Build({"--bogus-priv"});
  for (const char* name :
       {"1.1.168.192.in-addr.arpa", "1.168.192.in-addr.arpa", "4.3.2.10.in-addr.arpa",
        "1.0.20.172.in-addr.arpa", "1.0.0.127.in-addr.arpa", "10.2.0.192.in-addr.arpa",
        "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa"}) {
    INFO(name);
    LocalAnswer answer = Ask(local, name, dns::RrType::kPtr);
    CHECK(answer.kind == Kind::kNxDomain);
    CHECK(answer.aa);
    CHECK(Ask(local, name, dns::RrType::kAny).kind == Kind::kNxDomain);
    CHECK(Ask(local, name, dns::RrType::kTxt).kind == Kind::kNone);
  }
  for (const char* name :
       {"8.8.8.8.in-addr.arpa", "1.0.32.172.in-addr.arpa", "1.0.64.100.in-addr.arpa"}) {
    INFO(name);
    CHECK(Ask(local, name, dns::RrType::kPtr).kind == Kind::kNone);
  }
  // kube-dns's --server=/in-addr.arpa/127.0.0.1#10053 takes 10.x (the Service range).
  CHECK(
      local.Lookup(N("4.3.2.10.in-addr.arpa"), dns::RrType::kPtr, N("in-addr.arpa"), false).kind ==
      Kind::kNone);
}

}  // namespace
}  // namespace kdns::frontend

namespace kdns::frontend {
namespace {

TEST_CASE("an upstream NXDOMAIN for a name that exists here becomes NODATA", "[frontend][local]") {
  LocalAnswers local = Build({"--address=/addr.test/192.0.2.1"}, "10.9.9.9 v4only.test\n");
  auto response = [](dns::Rcode rcode) {
    std::vector<uint8_t> bytes(dns::kHeaderSize, 0);
    bytes[2] = 0x81;  // QR, RD
    bytes[3] = 0x80 | static_cast<uint8_t>(rcode);
    return bytes;
  };
  for (const char* name : {"v4only.test", "www.addr.test", "addr.test"}) {
    INFO(name);
    std::vector<uint8_t> nx = response(dns::Rcode::kNxDomain);
    local.ClearNxDomainOfKnownName(N(name), nx);
    CHECK(nx[3] == 0x80);  // NOERROR, RA kept
  }
  std::vector<uint8_t> other = response(dns::Rcode::kNxDomain);
  local.ClearNxDomainOfKnownName(N("sub.v4only.test"), other);  // hosts names are exact
  CHECK((other[3] & 0x0f) == static_cast<uint8_t>(dns::Rcode::kNxDomain));
  std::vector<uint8_t> servfail = response(dns::Rcode::kServFail);
  local.ClearNxDomainOfKnownName(N("v4only.test"), servfail);
  CHECK((servfail[3] & 0x0f) == static_cast<uint8_t>(dns::Rcode::kServFail));
}

}  // namespace
}  // namespace kdns::frontend

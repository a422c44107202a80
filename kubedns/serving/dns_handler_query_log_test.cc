// DnsHandler's query log (--log-queries, common/server/query_log.h) for the answers of an
// autopath walk: each is logged once, with where its answer came from (our records: local;
// an upstream: upstream), like any other answer; and a SERVFAIL kubedns makes when no
// upstream answers (failure, as frontend-cache logs it).
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "common/dns/message.h"
#include "common/dns/testing.h"
#include "common/k8s/decode.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "kubedns/answering/autopath.h"
#include "kubedns/serving/dns_handler.h"
#include "kubedns/serving/dns_handler_testing.h"
#include "test/support/fake_dns_server.h"

namespace kdns::kubedns {
namespace {

using dns::RrType;
using dns::testing::N;
using dns::testing::QuerySpec;
using namespace kubedns::testing;

std::shared_ptr<const Snapshot> ClusterSnapshot() {
  return SyncedRecords({R"({"metadata":{"name":"web","namespace":"other"},
                            "spec":{"clusterIP":"10.96.0.20","clusterIPs":["10.96.0.20"]}})"});
}

// The world outside: www.example.com A, silent.example.com no answer, everything else
// NXDOMAIN.
kdns::testing::Replies World(const kdns::testing::ReceivedQuery& received) {
  if (!received.parsed || received.message.questions.empty()) return {};
  const dns::Question& question = received.message.questions[0];
  if (question.name == N("silent.example.com.")) return {};
  dns::Message reply = kdns::testing::ReplyTo(received.message);
  if (question.name == N("www.example.com.")) {
    if (question.type == RrType::kA) {
      reply.answers.push_back(
          {question.name, RrType::kA, dns::RrClass::kIn, 300, kdns::testing::A("192.0.2.80")});
    }
  } else {
    reply.header.rcode = dns::Rcode::kNxDomain;
  }
  return {kdns::testing::Encode(reply)};
}

// A handler (DnsHandlerFixture) with autopath (cluster.local., then node.example.) and a
// query log whose lines the test reads.
class LogFixture : public DnsHandlerFixture {
 public:
  LogFixture()
      : DnsHandlerFixture(ClusterSnapshot()),
        world_(std::make_unique<kdns::testing::FakeDnsServer>(loop, World)) {
    EnableAutopath();
    SetQueryLog(&query_log_);
    Serve(std::make_shared<const UpstreamRoutes>(std::vector<UpstreamRoute>{},
                                                 upstream::UpstreamSet{world_->address()},
                                                 DefaultSource::kFlag));
  }
  ~LogFixture() { StopServing(); }

  dns::Message Ask(const std::string& name) { return DnsHandlerFixture::Ask(QuerySpec(name)); }

  // Asks `name`, which must be answered `rcode`, and requires that it is logged once, with
  // `rcode_text` and `source`.
  void RequireLoggedOnce(const std::string& name, dns::Rcode rcode, const std::string& rcode_text,
                         const std::string& source) {
    REQUIRE(Ask(name).rcode() == rcode);
    const auto lines = LinesFor(name);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find(" rcode=" + rcode_text + " ") != std::string::npos);
    CHECK(lines[0].find(" source=" + source + " ") != std::string::npos);
  }

  // The lines logged for `name`.
  std::vector<std::string> LinesFor(const std::string& name) const {
    std::vector<std::string> found;
    for (const auto& line : lines_) {
      if (line.find(" name=" + name + " ") != std::string::npos) found.push_back(line);
    }
    return found;
  }

 private:
  static server::QueryLogOptions LogOptions() {
    server::QueryLogOptions options;
    options.detail = server::QueryLogOptions::Detail::kBasic;
    options.max_lines_per_second = 0;
    return options;
  }

  std::unique_ptr<kdns::testing::FakeDnsServer> world_;
  std::vector<std::string> lines_;
  server::QueryLog query_log_{LogOptions(), SteadyClock::Instance(),
                              [this](std::string_view line) { lines_.emplace_back(line); }};
};

}  // namespace

TEST_CASE("an autopath answer from the records is logged once, as local",
          "[kubedns][autopath][handler]") {
  LogFixture f;
  f.RequireLoggedOnce("web.other.default.svc.cluster.local.", dns::Rcode::kNoError, "NOERROR",
                      "local");
}

TEST_CASE("an autopath answer from an upstream is logged once, as upstream",
          "[kubedns][autopath][handler]") {
  LogFixture f;
  f.RequireLoggedOnce("www.example.com.default.svc.cluster.local.", dns::Rcode::kNoError, "NOERROR",
                      "upstream");
}

TEST_CASE("a walk that finds nothing logs the query's own NXDOMAIN once, as local",
          "[kubedns][autopath][handler]") {
  LogFixture f;
  f.RequireLoggedOnce("nothing.here.default.svc.cluster.local.", dns::Rcode::kNxDomain, "NXDOMAIN",
                      "local");
}

TEST_CASE("a SERVFAIL made because no upstream answered is logged once, as failure",
          "[kubedns][handler]") {
  LogFixture f;
  f.RequireLoggedOnce("silent.example.com.", dns::Rcode::kServFail, "SERVFAIL", "failure");
}

}  // namespace kdns::kubedns

// The fake upstream DNS server of the upstream client's tests (header-only, test code only):
// the scripted fake of test/support/fake_dns_server.h, driven by a Behaviour: a normal
// answer (A 192.0.2.<tag>, so a test can tell which upstream answered), silence (to every
// name, or to a slow domain's only), an error rcode, a truncated UDP answer followed by the
// full answer over TCP, or a bad reply sent before the good one (wrong ID, wrong question or
// its case, from another port, garbage), or the question lower-cased (a server that does not
// echo 0x20 case). Every reply can be delayed.
//
// Thread: the loop's thread. Destroy it before closing the loop.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/message.h"
#include "common/dns/rdata.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/upstream/wire.h"
#include "test/support/fake_dns_server.h"

namespace kdns::upstream::testing {

enum class Behaviour {
  kAnswer,
  kSilent,
  kServFail,
  kRefused,
  kFormErrToEdns,  // FORMERR without a question to queries with EDNS; answers the others
  kTruncate,       // TC over UDP, the full answer over TCP
  kWrongIdFirst,
  kWrongQuestionFirst,
  kSpoofFirst,  // a forged answer (A 198.51.100.66) from another port, then the real one
  kGarbageFirst,
  kWrongCaseFirst,   // our ID and question in flipped case (A 198.51.100.66), then the real one
  kLowercased,       // answers with the question lower-cased: does not echo 0x20 case
  kSilentUnderSlow,  // never answers names under slow.example. (a slow domain), answers others
};

using ReceivedQuery = kdns::testing::ReceivedQuery;

class FakeUpstream {
 public:
  FakeUpstream(loop::Loop& loop, uint8_t tag) : tag_(tag), server_(loop, CurrentScript()) {}

  const loop::SocketAddress& address() const { return server_.address(); }
  void set_behaviour(Behaviour behaviour) {
    behaviour_ = behaviour;
    server_.set_script(CurrentScript());
  }
  void set_delay_ms(uint64_t delay_ms) {
    delay_ms_ = delay_ms;
    server_.set_script(CurrentScript());
  }
  // Each TCP connection answers `count` queries, then closes on the next one unanswered
  // (as a server closing an idle connection while our query is on its way).
  void set_tcp_queries_per_connection(size_t count) { server_.set_options({count}); }
  const std::vector<ReceivedQuery>& queries() const { return server_.queries(); }
  size_t CountQueries(dns::Transport transport) const { return server_.CountQueries(transport); }
  size_t tcp_connections_accepted() const { return server_.tcp_connections_accepted(); }
  dns::RdataA address_record() const { return A(192, 0, 2, tag_); }

  static dns::RdataA A(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t bytes[4] = {a, b, c, d};
    return dns::RdataA{IpAddress::FromV4(std::span<const uint8_t, 4>(bytes))};
  }

  // The normal answer to `query`, with `address` as its A record.
  static std::vector<uint8_t> Answer(const dns::Message& query, const dns::RdataA& address,
                                     dns::Rcode rcode = dns::Rcode::kNoError) {
    return kdns::testing::AnswerBytes(query, address, rcode);
  }

 private:
  kdns::testing::Script CurrentScript() const {
    namespace t = kdns::testing;
    t::Script answer = t::AnswerA(address_record());
    t::Script script;
    switch (behaviour_) {
      case Behaviour::kAnswer:
        script = answer;
        break;
      case Behaviour::kSilent:
        script = t::Silent();
        break;
      case Behaviour::kServFail:
        script = t::AnswerRcode(dns::Rcode::kServFail);
        break;
      case Behaviour::kRefused:
        script = t::AnswerRcode(dns::Rcode::kRefused);
        break;
      case Behaviour::kFormErrToEdns:
        script = t::FormErrToEdns(answer);
        break;
      case Behaviour::kTruncate:
        script = t::TruncatedOverUdp(answer);
        break;
      case Behaviour::kWrongIdFirst:
        script = t::WrongIdFirst(answer);
        break;
      case Behaviour::kWrongQuestionFirst:
        script = t::WrongQuestionFirst(answer);
        break;
      case Behaviour::kSpoofFirst:
        script = t::ForgedFirst(answer);
        break;
      case Behaviour::kGarbageFirst:
        script = t::GarbageFirst(answer);
        break;
      case Behaviour::kWrongCaseFirst:
        script = t::WrongCaseFirst(answer);
        break;
      case Behaviour::kLowercased:
        script = t::Lowercased(answer);
        break;
      case Behaviour::kSilentUnderSlow:
        script = [answer, silent = t::Silent()](const ReceivedQuery& query) {
          static const dns::Name kSlow = *dns::Name::FromText("slow.example.");
          const bool slow = query.parsed && !query.message.questions.empty() &&
                            query.message.questions[0].name.IsSubdomainOf(kSlow);
          return slow ? silent(query) : answer(query);
        };
        break;
    }
    return delay_ms_ == 0 ? script : t::Delayed(delay_ms_, script);
  }

  uint8_t tag_;
  Behaviour behaviour_ = Behaviour::kAnswer;
  uint64_t delay_ms_ = 0;
  kdns::testing::FakeDnsServer server_;
};

}  // namespace kdns::upstream::testing

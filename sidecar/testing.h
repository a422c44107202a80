// Test helpers for the sidecar's unit tests (header-only, test code only): scripts for the
// shared fake DNS server (test/support/fake_dns_server.h): an answer, an empty NXDOMAIN,
// dnsmasq's CHAOS statistics; and a port nothing listens on. The sidecar's tests live in this
// namespace, so each file names these helpers (and the loop's and the fake server's) without
// importing them.
//
// Thread: the loop's thread.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/rdata.h"
#include "common/loop/loop.h"
#include "common/loop/loop_test_util.h"
#include "common/loop/socket_address.h"
#include "sidecar/dnsmasq_stats.h"
#include "test/support/fake_dns_server.h"

namespace kdns::sidecar::testing {

using ::kdns::testing::A;
using ::kdns::testing::Encode;
using ::kdns::testing::FakeDnsServer;
using ::kdns::testing::ReceivedQuery;
using ::kdns::testing::Replies;
using ::kdns::testing::ReplyTo;
using ::kdns::testing::Script;
using loop::testing::LoopFixture;
using loop::testing::RawTcpClient;
using loop::testing::RequireClosesClean;
using loop::testing::RunUntil;

// Answers every IN query with one A record, 192.0.2.1.
inline Replies AnswerA(const ReceivedQuery& received) {
  if (!received.parsed) return {};
  const dns::Message& query = received.message;
  dns::Message reply = ReplyTo(query);
  reply.answers.push_back(
      {query.questions.at(0).name, dns::RrType::kA, dns::RrClass::kIn, 30, A("192.0.2.1")});
  return {Encode(reply)};
}

// NXDOMAIN with an empty answer section.
inline Replies AnswerNxDomain(const ReceivedQuery& received) {
  if (!received.parsed) return {};
  return {Encode(ReplyTo(received.message, dns::Rcode::kNxDomain))};
}

// dnsmasq's statistics: `<stat>.bind. CH TXT` gets one TXT record holding the decimal value
// from *values; any other question NOTIMP.
inline Script ChaosStats(const DnsmasqValues* values) {
  return [values](const ReceivedQuery& received) -> Replies {
    if (!received.parsed) return {};
    const dns::Message& query = received.message;
    const dns::Question& q = query.questions.at(0);
    for (DnsmasqStat stat : kAllDnsmasqStats) {
      if (q.cls == dns::RrClass::kCh && q.type == dns::RrType::kTxt &&
          q.name == *dns::Name::FromText(DnsmasqStatQueryName(stat))) {
        dns::Message reply = ReplyTo(query);
        reply.header.aa = true;
        reply.answers.push_back(
            {q.name, dns::RrType::kTxt, dns::RrClass::kCh, 0,
             dns::RdataTxt{{std::to_string((*values)[static_cast<size_t>(stat)])}}});
        return {Encode(reply)};
      }
    }
    return {Encode(ReplyTo(query, dns::Rcode::kNotImp))};
  };
}

// A loopback UDP port with nothing bound to it (queries to it are refused by the kernel).
inline loop::SocketAddress ClosedPort(loop::Loop& loop) {
  return ::kdns::testing::UnusedUdpAddress(loop);
}

}  // namespace kdns::sidecar::testing

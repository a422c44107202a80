// Test helpers for the sidecar's unit tests (header-only, test code only): a scripted DNS
// server on 127.0.0.1 (UDP) whose replies a test decides per query, reply builders (an
// answer, an empty NXDOMAIN, dnsmasq's CHAOS statistics), and a port nothing listens on.
//
// Thread: the loop's thread. Destroy the server before closing the loop.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/rdata.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/timer.h"
#include "common/loop/udp_socket.h"
#include "sidecar/dnsmasq_stats.h"

namespace kdns::sidecar::testing {

// The reply skeleton for `query`: ID, RD and the question copied, QR and RA set.
inline dns::Message ReplyTo(const dns::Message& query, dns::Rcode rcode = dns::Rcode::kNoError) {
  dns::Message reply;
  reply.header.id = query.header.id;
  reply.header.qr = true;
  reply.header.rd = query.header.rd;
  reply.header.ra = true;
  reply.header.rcode = rcode;
  reply.questions = query.questions;
  return reply;
}

inline dns::RdataA A(std::string_view ip) { return dns::RdataA{*IpAddress::Parse(ip)}; }

inline std::vector<uint8_t> Encode(const dns::Message& message) {
  std::vector<uint8_t> out;
  REQUIRE(dns::BuildMessage(message, dns::kMaxMessageSize, &out) == dns::BuildError::kOk);
  return out;
}

// A UDP DNS server whose script turns each query into the bytes to send back (nullopt:
// stay silent). Replies can be delayed.
class ScriptedDnsServer {
 public:
  using Script = std::function<std::optional<std::vector<uint8_t>>(const dns::Message& query)>;

  ScriptedDnsServer(loop::Loop& loop, Script script) : loop_(loop), script_(std::move(script)) {
    std::string error;
    socket_ = loop::UdpSocket::Bind(
        loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {},
        [this](std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
               const loop::UdpSocket::ReplyContext&) { OnQuery(datagram, peer); },
        &error);
    INFO(error);
    REQUIRE(socket_ != nullptr);
  }

  loop::SocketAddress address() const { return socket_->GetLocalAddress(); }
  void set_script(Script script) { script_ = std::move(script); }
  void set_delay_ms(uint64_t delay_ms) { delay_ms_ = delay_ms; }
  const std::vector<dns::Message>& queries() const { return queries_; }

 private:
  void OnQuery(std::span<const uint8_t> datagram, const loop::SocketAddress& peer) {
    dns::Message query;
    if (dns::ParseMessage(datagram, &query) != dns::ParseError::kOk) return;
    queries_.push_back(query);
    std::optional<std::vector<uint8_t>> reply = script_(query);
    if (!reply) return;
    if (delay_ms_ == 0) {
      socket_->Send(*reply, peer);
      return;
    }
    timers_.emplace_back(loop_).Start(
        delay_ms_, [this, peer, bytes = std::move(*reply)] { socket_->Send(bytes, peer); });
  }

  loop::Loop& loop_;
  Script script_;
  uint64_t delay_ms_ = 0;
  std::unique_ptr<loop::UdpSocket> socket_;
  std::list<loop::Timer> timers_;
  std::vector<dns::Message> queries_;
};

// Answers every IN query with one A record, 192.0.2.1.
inline std::optional<std::vector<uint8_t>> AnswerA(const dns::Message& query) {
  dns::Message reply = ReplyTo(query);
  reply.answers.push_back(
      {query.questions.at(0).name, dns::RrType::kA, dns::RrClass::kIn, 30, A("192.0.2.1")});
  return Encode(reply);
}

// NXDOMAIN with an empty answer section.
inline std::optional<std::vector<uint8_t>> AnswerNxDomain(const dns::Message& query) {
  return Encode(ReplyTo(query, dns::Rcode::kNxDomain));
}

// dnsmasq's statistics: `<stat>.bind. CH TXT` gets one TXT record holding the decimal value
// from *values; any other question NOTIMP.
inline ScriptedDnsServer::Script ChaosStats(const DnsmasqValues* values) {
  return [values](const dns::Message& query) -> std::optional<std::vector<uint8_t>> {
    const dns::Question& q = query.questions.at(0);
    for (DnsmasqStat stat : kAllDnsmasqStats) {
      if (q.cls == dns::RrClass::kCh && q.type == dns::RrType::kTxt &&
          q.name == *dns::Name::FromText(DnsmasqStatQueryName(stat))) {
        dns::Message reply = ReplyTo(query);
        reply.header.aa = true;
        reply.answers.push_back(
            {q.name, dns::RrType::kTxt, dns::RrClass::kCh, 0,
             dns::RdataTxt{{std::to_string((*values)[static_cast<size_t>(stat)])}}});
        return Encode(reply);
      }
    }
    return Encode(ReplyTo(query, dns::Rcode::kNotImp));
  };
}

// A loopback UDP port with nothing bound to it (queries to it are refused by the kernel).
inline loop::SocketAddress ClosedPort(loop::Loop& loop) {
  std::string error;
  auto socket = loop::UdpSocket::Bind(
      loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {},
      [](std::span<const uint8_t>, const loop::SocketAddress&,
         const loop::UdpSocket::ReplyContext&) {},
      &error);
  REQUIRE(socket != nullptr);
  return socket->GetLocalAddress();
}

}  // namespace kdns::sidecar::testing

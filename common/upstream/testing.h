// A scripted fake upstream DNS server for the upstream client's tests (header-only, test
// code only). It listens on 127.0.0.1 with one port for UDP and TCP, records every query
// it gets, and answers according to its Behaviour: a normal answer (A 192.0.2.<tag>, so a
// test can tell which upstream answered), silence, an error rcode, a truncated UDP answer
// followed by the full answer over TCP, or a bad reply sent before the good one (wrong ID,
// wrong question, from another port, garbage). Every reply can be delayed.
//
// Thread: the loop's thread. Destroy it before closing the loop.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/rdata.h"
#include "common/loop/dns_tcp_connection.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/tcp_listener.h"
#include "common/loop/timer.h"
#include "common/loop/udp_socket.h"
#include "common/upstream/wire.h"

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
};

struct ReceivedQuery {
  Transport transport = Transport::kUdp;
  dns::Message message;
  loop::SocketAddress from;
};

class FakeUpstream {
 public:
  FakeUpstream(loop::Loop& loop, uint8_t tag) : loop_(loop), tag_(tag) {
    std::string error;
    for (int attempt = 0; attempt < 20 && listener_ == nullptr; ++attempt) {
      udp_ = loop::UdpSocket::Bind(
          loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {},
          [this](std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                 const loop::UdpSocket::ReplyContext&) { OnUdp(datagram, peer); },
          &error);
      REQUIRE(udp_ != nullptr);
      address_ = udp_->GetLocalAddress();
      loop::TcpListener::Options options;
      listener_ = loop::TcpListener::Bind(
          loop, address_, options,
          [this](std::unique_ptr<loop::TcpConnection> connection) {
            OnAccept(std::move(connection));
          },
          &error);
    }
    REQUIRE(listener_ != nullptr);
    spoof_ = loop::UdpSocket::Bind(
        loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {},
        [](std::span<const uint8_t>, const loop::SocketAddress&,
           const loop::UdpSocket::ReplyContext&) {},
        &error);
    REQUIRE(spoof_ != nullptr);
  }

  const loop::SocketAddress& address() const { return address_; }
  void set_behaviour(Behaviour behaviour) { behaviour_ = behaviour; }
  void set_delay_ms(uint64_t delay_ms) { delay_ms_ = delay_ms; }
  // Each TCP connection answers `count` queries, then closes on the next one unanswered
  // (as a server closing an idle connection while our query is on its way).
  void set_tcp_queries_per_connection(size_t count) { tcp_queries_per_connection_ = count; }
  const std::vector<ReceivedQuery>& queries() const { return queries_; }
  size_t CountQueries(Transport transport) const {
    size_t n = 0;
    for (const auto& q : queries_) n += q.transport == transport ? 1 : 0;
    return n;
  }
  size_t tcp_connections_accepted() const { return accepted_; }
  dns::RdataA address_record() const { return A(192, 0, 2, tag_); }

  static dns::RdataA A(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t bytes[4] = {a, b, c, d};
    return dns::RdataA{IpAddress::FromV4(std::span<const uint8_t, 4>(bytes))};
  }

  // The normal answer to `query`, with `address` as its A record.
  static std::vector<uint8_t> Answer(const dns::Message& query, const dns::RdataA& address,
                                     dns::Rcode rcode = dns::Rcode::kNoError) {
    dns::Message reply;
    reply.header.id = query.header.id;
    reply.header.qr = true;
    reply.header.rd = query.header.rd;
    reply.header.ra = true;
    reply.header.rcode = rcode;
    reply.questions = query.questions;
    if (rcode == dns::Rcode::kNoError && !query.questions.empty() &&
        query.questions.front().cls == dns::RrClass::kIn) {
      const dns::Question& q = query.questions.front();
      reply.answers.push_back(dns::ResourceRecord{q.name, dns::RrType::kA, q.cls, 60, address});
    }
    if (query.edns) reply.edns = dns::Edns{};
    std::vector<uint8_t> out;
    REQUIRE(dns::BuildMessage(reply, dns::kMaxMessageSize, &out) == dns::BuildError::kOk);
    return out;
  }

 private:
  using SendFn = std::function<void(std::vector<uint8_t> bytes, bool spoof)>;

  void OnUdp(std::span<const uint8_t> datagram, const loop::SocketAddress& peer) {
    Handle(Transport::kUdp, datagram, peer, [this, peer](std::vector<uint8_t> bytes, bool spoof) {
      (spoof ? spoof_ : udp_)->Send(bytes, peer);
    });
  }

  void OnAccept(std::unique_ptr<loop::TcpConnection> connection) {
    ++accepted_;
    const uint64_t id = next_connection_id_++;
    const loop::SocketAddress peer = connection->peer_address();
    auto dns_connection = std::make_unique<loop::DnsTcpConnection>(
        loop_, std::move(connection), loop::DnsTcpConnection::Options{},
        [this, id, peer, served = size_t{0}](std::span<const uint8_t> query) mutable {
          if (tcp_queries_per_connection_ != 0 && served++ == tcp_queries_per_connection_) {
            auto it = connections_.find(id);
            if (it != connections_.end()) it->second->Close();
            return;
          }
          Handle(Transport::kTcp, query, peer, [this, id](std::vector<uint8_t> bytes, bool) {
            auto it = connections_.find(id);
            if (it != connections_.end()) it->second->Send(bytes);
          });
        },
        [this, id](loop::TcpConnection::CloseReason) { connections_.erase(id); });
    connections_.emplace(id, std::move(dns_connection));
  }

  void Handle(Transport transport, std::span<const uint8_t> bytes, const loop::SocketAddress& peer,
              const SendFn& send) {
    ReceivedQuery received{transport, {}, peer};
    if (dns::ParseMessage(bytes, &received.message) != dns::ParseError::kOk) return;
    queries_.push_back(received);
    const dns::Message& query = queries_.back().message;
    std::vector<std::pair<std::vector<uint8_t>, bool>> replies;
    auto answer = [&] { replies.emplace_back(Answer(query, address_record()), false); };
    switch (behaviour_) {
      case Behaviour::kAnswer:
        answer();
        break;
      case Behaviour::kSilent:
        break;
      case Behaviour::kServFail:
        replies.emplace_back(Answer(query, address_record(), dns::Rcode::kServFail), false);
        break;
      case Behaviour::kRefused:
        replies.emplace_back(Answer(query, address_record(), dns::Rcode::kRefused), false);
        break;
      case Behaviour::kFormErrToEdns:
        if (query.edns) {
          dns::Message formerr;
          formerr.header.id = query.header.id;
          formerr.header.qr = true;
          formerr.header.rcode = dns::Rcode::kFormErr;
          std::vector<uint8_t> out;
          REQUIRE(dns::BuildMessage(formerr, 512, &out) == dns::BuildError::kOk);
          replies.emplace_back(std::move(out), false);
        } else {
          answer();
        }
        break;
      case Behaviour::kTruncate:
        if (transport == Transport::kUdp) {
          dns::Message tc = query;
          tc.header.qr = true;
          tc.header.tc = true;
          std::vector<uint8_t> out;
          REQUIRE(dns::BuildMessage(tc, 512, &out) == dns::BuildError::kOk);
          replies.emplace_back(std::move(out), false);
        } else {
          answer();
        }
        break;
      case Behaviour::kWrongIdFirst: {
        dns::Message other = query;
        other.header.id = static_cast<uint16_t>(query.header.id + 1);
        replies.emplace_back(Answer(other, A(198, 51, 100, 66)), false);
        answer();
        break;
      }
      case Behaviour::kWrongQuestionFirst: {
        dns::Message other = query;
        other.questions.front().name = *dns::Name::FromText("wrong.example.");
        replies.emplace_back(Answer(other, A(198, 51, 100, 66)), false);
        answer();
        break;
      }
      case Behaviour::kSpoofFirst:
        replies.emplace_back(Answer(query, A(198, 51, 100, 66)), true);
        answer();
        break;
      case Behaviour::kGarbageFirst: {
        // Our ID and QR, a question that runs off the end.
        std::vector<uint8_t> garbage = {static_cast<uint8_t>(query.header.id >> 8),
                                        static_cast<uint8_t>(query.header.id & 0xFF),
                                        0x81,
                                        0x80,
                                        0,
                                        1,
                                        0,
                                        0,
                                        0,
                                        0,
                                        0,
                                        0,
                                        7,
                                        'b',
                                        'r'};
        replies.emplace_back(std::move(garbage), false);
        answer();
        break;
      }
    }
    for (auto& [reply, spoof] : replies) {
      if (delay_ms_ == 0) {
        send(std::move(reply), spoof);
        continue;
      }
      auto& timer = timers_.emplace_back(loop_);
      timer.Start(delay_ms_, [send, reply = std::move(reply), spoof = spoof]() mutable {
        send(std::move(reply), spoof);
      });
    }
  }

  loop::Loop& loop_;
  uint8_t tag_;
  Behaviour behaviour_ = Behaviour::kAnswer;
  uint64_t delay_ms_ = 0;
  size_t tcp_queries_per_connection_ = 0;  // 0: no limit
  loop::SocketAddress address_;
  std::unique_ptr<loop::UdpSocket> udp_;
  std::unique_ptr<loop::UdpSocket> spoof_;
  std::unique_ptr<loop::TcpListener> listener_;
  std::map<uint64_t, std::unique_ptr<loop::DnsTcpConnection>> connections_;
  uint64_t next_connection_id_ = 0;
  size_t accepted_ = 0;
  std::vector<ReceivedQuery> queries_;
  std::list<loop::Timer> timers_;
};

}  // namespace kdns::upstream::testing

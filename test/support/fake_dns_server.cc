#include "test/support/fake_dns_server.h"

#include <glog/logging.h>

#include <list>
#include <map>
#include <string>
#include <utility>

#include "common/base/ip_address.h"
#include "common/dns/builder.h"
#include "common/loop/dns_tcp_connection.h"
#include "common/loop/tcp_listener.h"
#include "common/loop/timer.h"
#include "common/loop/udp_socket.h"

namespace kdns::testing {
namespace {

// A script that answers only what parses, with `answer(query)`.
Script Parsed(std::function<Replies(const dns::Message& query)> answer) {
  return [answer = std::move(answer)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed) return {};
    return answer(query.message);
  };
}

Replies Concat(Replies first, Replies second) {
  first.insert(first.end(), std::make_move_iterator(second.begin()),
               std::make_move_iterator(second.end()));
  return first;
}

}  // namespace

dns::Message ReplyTo(const dns::Message& query, dns::Rcode rcode) {
  dns::Message reply;
  reply.header.id = query.header.id;
  reply.header.qr = true;
  reply.header.rd = query.header.rd;
  reply.header.ra = true;
  reply.header.rcode = rcode;
  reply.questions = query.questions;
  return reply;
}

std::vector<uint8_t> Encode(const dns::Message& message) {
  std::vector<uint8_t> out;
  CHECK(dns::BuildMessage(message, dns::kMaxMessageSize, &out) == dns::BuildError::kOk);
  return out;
}

dns::RdataA A(std::string_view ip) {
  std::optional<IpAddress> parsed = IpAddress::Parse(ip);
  CHECK(parsed) << ip;
  return dns::RdataA{*parsed};
}

std::vector<uint8_t> AnswerBytes(const dns::Message& query, const dns::RdataA& address,
                                 dns::Rcode rcode) {
  dns::Message reply = ReplyTo(query, rcode);
  if (rcode == dns::Rcode::kNoError && !query.questions.empty() &&
      query.questions.front().cls == dns::RrClass::kIn) {
    const dns::Question& q = query.questions.front();
    reply.answers.push_back(dns::ResourceRecord{q.name, dns::RrType::kA, q.cls, 60, address});
  }
  if (query.edns) reply.edns = dns::Edns{};
  return Encode(reply);
}

Script AnswerA(dns::RdataA address) {
  return Parsed(
      [address](const dns::Message& query) -> Replies { return {AnswerBytes(query, address)}; });
}

Script AnswerRcode(dns::Rcode rcode) {
  return Parsed([rcode](const dns::Message& query) -> Replies {
    dns::Message reply = ReplyTo(query, rcode);
    if (query.edns) reply.edns = dns::Edns{};
    return {Encode(reply)};
  });
}

Script Silent() {
  return [](const ReceivedQuery&) { return Replies{}; };
}

Script FormErrToEdns(Script otherwise) {
  return [otherwise = std::move(otherwise)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed || !query.message.edns) return otherwise(query);
    dns::Message formerr;
    formerr.header.id = query.message.header.id;
    formerr.header.qr = true;
    formerr.header.rcode = dns::Rcode::kFormErr;
    return {Encode(formerr)};
  };
}

Script TruncatedOverUdp(Script over_tcp) {
  return [over_tcp = std::move(over_tcp)](const ReceivedQuery& query) -> Replies {
    if (query.transport == Transport::kTcp) return over_tcp(query);
    if (!query.parsed) return {};
    dns::Message tc = query.message;
    tc.header.qr = true;
    tc.header.tc = true;
    return {Encode(tc)};
  };
}

Script Delayed(uint64_t delay_ms, Script script) {
  return [delay_ms, script = std::move(script)](const ReceivedQuery& query) {
    Replies replies = script(query);
    for (Reply& reply : replies) reply.delay_ms += delay_ms;
    return replies;
  };
}

Script WrongIdFirst(Script script) {
  return [script = std::move(script)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed) return script(query);
    dns::Message other = query.message;
    other.header.id = static_cast<uint16_t>(query.message.header.id + 1);
    return Concat({AnswerBytes(other, A("198.51.100.66"))}, script(query));
  };
}

Script WrongQuestionFirst(Script script) {
  return [script = std::move(script)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed || query.message.questions.empty()) return script(query);
    dns::Message other = query.message;
    other.questions.front().name = *dns::Name::FromText("wrong.example.");
    return Concat({AnswerBytes(other, A("198.51.100.66"))}, script(query));
  };
}

Script ForgedFirst(Script script) {
  return [script = std::move(script)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed) return script(query);
    Reply forged(AnswerBytes(query.message, A("198.51.100.66")));
    forged.from_other_port = true;
    return Concat({std::move(forged)}, script(query));
  };
}

Script WrongCaseFirst(Script script) {
  return [script = std::move(script)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed || query.message.questions.empty()) return script(query);
    const dns::Name& name = query.message.questions.front().name;
    dns::Name flipped;
    for (size_t i = 0; i < name.label_count(); ++i) {
      std::string label(name.label(i));
      for (char& c : label) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) c = static_cast<char>(c ^ 0x20);
      }
      CHECK(flipped.AppendLabel(label));
    }
    dns::Message other = query.message;
    other.questions.front().name = flipped;
    return Concat({AnswerBytes(other, A("198.51.100.66"))}, script(query));
  };
}

Script Lowercased(Script script) {
  return [script = std::move(script)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed || query.message.questions.empty()) return script(query);
    ReceivedQuery lowered = query;
    lowered.message.questions.front().name = query.message.questions.front().name.Lowercased();
    return script(lowered);
  };
}

Script GarbageFirst(Script script) {
  return [script = std::move(script)](const ReceivedQuery& query) -> Replies {
    if (!query.parsed) return script(query);
    const uint16_t id = query.message.header.id;
    std::vector<uint8_t> garbage = {static_cast<uint8_t>(id >> 8),
                                    static_cast<uint8_t>(id & 0xFF),
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
    return Concat({std::move(garbage)}, script(query));
  };
}

struct FakeDnsServer::Io {
  void OnUdp(FakeDnsServer& server, std::span<const uint8_t> datagram,
             const loop::SocketAddress& peer) {
    server.Handle(Transport::kUdp, datagram, peer, [this, peer](const Reply& reply) {
      (reply.from_other_port ? other_port : udp)->Send(reply.bytes, reply.to.value_or(peer));
    });
  }

  void OnAccept(FakeDnsServer& server, std::unique_ptr<loop::TcpConnection> connection) {
    ++accepted;
    const uint64_t id = next_connection_id++;
    const loop::SocketAddress peer = connection->peer_address();
    loop::DnsTcpConnection::Options options;
    options.query_timeout_ms = 0;  // an upstream that does not answer holds its queries
    auto dns_connection = std::make_unique<loop::DnsTcpConnection>(
        server.loop_, std::move(connection), options,
        [this, &server, id, peer, served = size_t{0}](std::span<const uint8_t> query) mutable {
          size_t limit = 0;
          {
            std::lock_guard lock(server.mu_);
            limit = server.options_.tcp_queries_per_connection;
          }
          if (limit != 0 && served++ == limit) {
            auto it = connections.find(id);
            if (it != connections.end()) it->second->Close();
            return;
          }
          server.Handle(Transport::kTcp, query, peer, [this, id](const Reply& reply) {
            auto it = connections.find(id);
            if (it != connections.end()) it->second->Send(reply.bytes);
          });
        },
        [this, id](loop::TcpConnection::CloseReason) { connections.erase(id); });
    connections.emplace(id, std::move(dns_connection));
  }

  std::unique_ptr<loop::UdpSocket> udp;
  std::unique_ptr<loop::UdpSocket> other_port;  // sends forged replies; drops what it gets
  std::unique_ptr<loop::TcpListener> listener;
  std::map<uint64_t, std::unique_ptr<loop::DnsTcpConnection>> connections;
  uint64_t next_connection_id = 0;
  size_t accepted = 0;
  std::list<loop::Timer> timers;  // delayed replies
};

FakeDnsServer::FakeDnsServer(loop::Loop& loop, Script script, Options options)
    : loop_(loop), io_(std::make_unique<Io>()), script_(std::move(script)), options_(options) {
  std::string error;
  // UDP and TCP on one port, as clients that retry over TCP after TC expect: an ephemeral UDP
  // port, then the same TCP port (another process may hold it: try again).
  for (int attempt = 0; attempt < 20 && io_->listener == nullptr; ++attempt) {
    io_->udp = loop::UdpSocket::Bind(
        loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {},
        [this](std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
               const loop::UdpSocket::ReplyContext&) { io_->OnUdp(*this, datagram, peer); },
        &error);
    CHECK(io_->udp != nullptr) << error;
    address_ = io_->udp->GetLocalAddress();
    io_->listener = loop::TcpListener::Bind(
        loop, address_, {},
        [this](std::unique_ptr<loop::TcpConnection> connection) {
          io_->OnAccept(*this, std::move(connection));
        },
        &error);
  }
  CHECK(io_->listener != nullptr) << error;
  io_->other_port = loop::UdpSocket::Bind(
      loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {},
      [](std::span<const uint8_t>, const loop::SocketAddress&,
         const loop::UdpSocket::ReplyContext&) {},
      &error);
  CHECK(io_->other_port != nullptr) << error;
}

FakeDnsServer::~FakeDnsServer() { io_.reset(); }  // before the state its callbacks use

void FakeDnsServer::set_script(Script script) {
  std::lock_guard lock(mu_);
  script_ = std::move(script);
}

void FakeDnsServer::set_options(Options options) {
  std::lock_guard lock(mu_);
  options_ = options;
}

std::vector<ReceivedQuery> FakeDnsServer::CopyQueries() const {
  std::lock_guard lock(mu_);
  return queries_;
}

size_t FakeDnsServer::CountQueries(Transport transport) const {
  std::lock_guard lock(mu_);
  return transport == Transport::kTcp ? tcp_count_ : udp_count_;
}

size_t FakeDnsServer::CountQueries() const {
  std::lock_guard lock(mu_);
  return udp_count_ + tcp_count_;
}

size_t FakeDnsServer::garbage_count() const {
  std::lock_guard lock(mu_);
  return garbage_;
}

size_t FakeDnsServer::tcp_connections_accepted() const { return io_->accepted; }

void FakeDnsServer::Handle(Transport transport, std::span<const uint8_t> bytes,
                           const loop::SocketAddress& peer, const SendFn& send) {
  ReceivedQuery received;
  received.transport = transport;
  received.from = peer;
  received.bytes.assign(bytes.begin(), bytes.end());
  received.parsed = dns::ParseMessage(bytes, &received.message) == dns::ParseError::kOk;
  if (!received.parsed) received.message = dns::Message{};
  Script script;
  {
    std::lock_guard lock(mu_);
    if (received.parsed) {
      queries_.push_back(received);
      ++(transport == Transport::kTcp ? tcp_count_ : udp_count_);
    } else {
      ++garbage_;
    }
    script = script_;
  }
  for (Reply& reply : script(received)) {
    if (reply.delay_ms == 0) {
      send(reply);
      continue;
    }
    const uint64_t delay_ms = reply.delay_ms;
    io_->timers.emplace_back(loop_).Start(delay_ms,
                                          [send, reply = std::move(reply)] { send(reply); });
  }
}

FakeDnsServerThread::FakeDnsServerThread(Script script, FakeDnsServer::Options options) {
  thread_ = std::thread(
      [this, script = std::move(script), options]() mutable { Run(std::move(script), options); });
  std::unique_lock lock(mu_);
  started_.wait(lock, [this] { return server_ != nullptr; });
}

FakeDnsServerThread::~FakeDnsServerThread() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  poster_.Post([] {});  // wakes Run(), which then sees stopping_
  thread_.join();
  CHECK(closed_clean_) << "fake DNS server's loop leaked a handle";
}

void FakeDnsServerThread::Run(Script script, FakeDnsServer::Options options) {
  loop::Loop loop;
  {
    loop::TaskQueue tasks(loop);
    FakeDnsServer server(loop, std::move(script), options);
    bool stop = false;
    {
      std::lock_guard lock(mu_);
      poster_ = tasks.poster();
      server_ = &server;
    }
    started_.notify_all();
    // Until the destructor sets stopping_ and wakes the loop with a task.
    while (!stop) {
      loop.RunOnce();
      std::lock_guard lock(mu_);
      stop = stopping_;
    }
  }
  closed_clean_ = loop.Close();
}

loop::SocketAddress UnusedUdpAddress(loop::Loop& loop) {
  std::string error;
  auto socket = loop::UdpSocket::Bind(
      loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {},
      [](std::span<const uint8_t>, const loop::SocketAddress&,
         const loop::UdpSocket::ReplyContext&) {},
      &error);
  CHECK(socket != nullptr) << "binding 127.0.0.1:0: " << error;
  return socket->GetLocalAddress();
}

}  // namespace kdns::testing

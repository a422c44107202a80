#include "test/integration/responder.h"

#include <glog/logging.h>

#include <memory>
#include <unordered_map>

#include "common/dns/builder.h"
#include "common/dns/parser.h"
#include "common/loop/dns_tcp_connection.h"
#include "common/loop/loop.h"
#include "common/loop/tcp_listener.h"
#include "common/loop/udp_socket.h"

namespace kdns::testing {

namespace {

std::string Key(const dns::Name& name) { return name.Lowercased().ToText(); }

}  // namespace

Responder::Responder(const std::map<std::string, ResponderEntry>& table, dns::ResourceRecord soa)
    : soa_(std::move(soa)) {
  for (const auto& [owner, entry] : table) {
    auto name = dns::Name::FromText(owner);
    CHECK(name) << owner;
    table_[Key(*name)] = entry;
  }
  thread_ = std::thread([this] { Serve(); });
  std::unique_lock lock(mutex_);
  ready_cv_.wait(lock, [this] { return ready_; });
  CHECK(udp_port_ != 0 && tcp_port_ != 0) << "responder failed to bind";
}

Responder::~Responder() {
  {
    std::lock_guard lock(mutex_);
    ready_ = false;
  }
  poster_.Post([] {});  // wakes the loop, which then sees ready_ cleared and stops
  thread_.join();
  CHECK(closed_clean_) << "responder loop leaked a handle";
}

std::vector<uint8_t> Responder::LastResponse() const {
  std::lock_guard lock(mutex_);
  return last_response_;
}

uint64_t Responder::formerr_count() const {
  std::lock_guard lock(mutex_);
  return formerr_count_;
}

std::vector<uint8_t> Responder::Answer(std::span<const uint8_t> packet, size_t udp_limit) {
  dns::Query query;
  dns::ParseError error = dns::ParseQuery(packet, &query);
  std::vector<uint8_t> out(dns::kMaxMessageSize);
  if (error != dns::ParseError::kOk) {
    if (packet.size() < dns::kHeaderSize) return {};
    dns::MessageBuilder builder(out, dns::kMaxUdpSizeWithoutEdns);
    builder.header().id = query.header.id;
    builder.header().qr = true;
    builder.header().opcode = query.header.opcode;
    builder.header().rcode = dns::Rcode::kFormErr;
    out.resize(builder.Finish().size());
    std::lock_guard lock(mutex_);
    ++formerr_count_;
    return out;
  }

  size_t limit = dns::kMaxMessageSize;
  if (udp_limit != 0) limit = query.edns ? query.edns->PayloadSize() : udp_limit;
  dns::MessageBuilder builder(out, limit);
  if (builder.StartResponse(query) != dns::BuildError::kOk) return {};
  if (query.edns) (void)builder.SetEdns(dns::EdnsView{});
  builder.header().aa = true;

  auto found = table_.find(Key(query.qname));
  if (found == table_.end()) {
    builder.header().rcode = dns::Rcode::kNxDomain;
    (void)builder.AddRecord(dns::Section::kAuthority, soa_);
  } else {
    // One RRset per (type) in table order; each set is added whole or truncated whole.
    auto add_section = [&](dns::Section section, const std::vector<dns::ResourceRecord>& rrs,
                           bool filter) {
      size_t i = 0;
      while (i < rrs.size()) {
        size_t j = i;
        while (j < rrs.size() && rrs[j].type == rrs[i].type) ++j;
        bool wanted = !filter || query.qtype == dns::RrType::kAny || rrs[i].type == query.qtype;
        if (wanted) {
          builder.BeginRrset(section);
          for (size_t k = i; k < j; ++k) builder.Add(rrs[k]);
          (void)builder.EndRrset();
        }
        i = j;
      }
    };
    add_section(dns::Section::kAnswer, found->second.answers, true);
    add_section(dns::Section::kAuthority, found->second.authorities, false);
    add_section(dns::Section::kAdditional, found->second.additionals, false);
  }
  out.resize(builder.Finish().size());
  std::lock_guard lock(mutex_);
  last_response_ = out;
  return out;
}

void Responder::Serve() {
  loop::Loop loop;
  {
    auto tasks = std::make_unique<loop::TaskQueue>(loop);
    std::string error;
    std::unique_ptr<loop::UdpSocket> udp;
    auto on_datagram = [&](std::span<const uint8_t> datagram, const loop::SocketAddress& peer,
                           const loop::UdpReplyContext& ctx) {
      std::vector<uint8_t> reply = Answer(datagram, dns::kMaxUdpSizeWithoutEdns);
      if (!reply.empty()) udp->Send(reply, peer, ctx);
    };

    uint64_t next_id = 0;
    std::unordered_map<uint64_t, std::unique_ptr<loop::DnsTcpConnection>> connections;
    auto on_accept = [&](std::unique_ptr<loop::TcpConnection> connection) {
      uint64_t id = next_id++;
      auto on_query = [&, id](std::span<const uint8_t> query) {
        std::vector<uint8_t> reply = Answer(query, 0);
        auto it = connections.find(id);
        if (reply.empty() || it == connections.end()) return;
        it->second->Send(reply);
      };
      auto on_close = [&, id](loop::TcpConnection::CloseReason) { connections.erase(id); };
      connections[id] = std::make_unique<loop::DnsTcpConnection>(
          loop, std::move(connection), loop::DnsTcpConnection::Options{}, on_query, on_close);
    };

    // UDP and TCP on the same port, as clients that retry over TCP after TC expect: take an
    // ephemeral UDP port, then the same TCP port (another process may hold it: try again).
    std::unique_ptr<loop::TcpListener> tcp;
    for (int attempt = 0; attempt < 20 && !tcp; ++attempt) {
      udp = loop::UdpSocket::Bind(loop, *loop::SocketAddress::Parse("127.0.0.1:0"), {}, on_datagram,
                                  &error);
      CHECK(udp) << error;
      tcp = loop::TcpListener::Bind(
          loop, *loop::SocketAddress::FromHostPort("127.0.0.1", udp->GetLocalAddress().port()), {},
          on_accept, &error);
    }
    CHECK(tcp) << error;

    {
      std::lock_guard lock(mutex_);
      udp_port_ = udp->GetLocalAddress().port();
      tcp_port_ = tcp->GetLocalAddress().port();
      poster_ = tasks->poster();
      ready_ = true;
    }
    ready_cv_.notify_all();

    // Runs until the destructor clears ready_ and wakes us with a task.
    while (true) {
      loop.RunOnce();
      std::lock_guard lock(mutex_);
      if (!ready_) break;
    }
    connections.clear();
    tcp.reset();
    udp.reset();
    tasks.reset();
  }
  bool clean = loop.Close();
  std::lock_guard lock(mutex_);
  closed_clean_ = clean;
}

}  // namespace kdns::testing

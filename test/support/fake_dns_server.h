// The scripted fake DNS server of the C++ tests: the upstream that the forwarder, the
// frontend-cache, kubedns, the nanny's and the sidecar's resolvers talk to, and the server
// that dig and kdig query in the integration tests.
//
// It binds 127.0.0.1:0 for UDP and the same port for TCP, records every query it receives
// (those that parse as DNS; the others are only counted) and answers each with what its
// Script returns: any number of replies, each possibly delayed, sent from another port (a
// forged answer) or sent elsewhere. The scripts below cover what the tests need: a fixed
// answer, an rcode, silence, TC over UDP with the answer over TCP, and a wrong reply (wrong
// ID, wrong question, forged, garbage) before the right one. A script sees the raw bytes,
// so it can also answer malformed queries.
//
// Ownership and threads: FakeDnsServer lives on the thread of the loop it is given (a test
// that drives its loop itself); destroy it before closing the loop. FakeDnsServerThread runs
// one on a thread and loop of its own, for tests whose code under test runs its own threads
// or blocks (a child process like dig). Scripts run on the server's loop thread: no Catch2
// macro in them (Catch is for the test's thread only). set_script(), CountQueries(),
// CopyQueries(), garbage_count() and address() may be called from any thread; queries() and
// tcp_connections_accepted() only from the loop's thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/rdata.h"
#include "common/dns/transport.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/task_queue.h"

namespace kdns::testing {

using dns::Transport;

struct ReceivedQuery {
  Transport transport = Transport::kUdp;
  dns::Message message;  // empty unless `parsed`
  loop::SocketAddress from;
  std::vector<uint8_t> bytes;  // as received
  bool parsed = false;
};

struct Reply {
  Reply(std::vector<uint8_t> reply_bytes) : bytes(std::move(reply_bytes)) {}  // NOLINT: implicit
  std::vector<uint8_t> bytes;
  uint64_t delay_ms = 0;
  bool from_other_port = false;           // UDP: from another socket (a forged answer)
  std::optional<loop::SocketAddress> to;  // UDP: elsewhere than to the sender
};

using Replies = std::vector<Reply>;
using Script = std::function<Replies(const ReceivedQuery& query)>;

// Reply builders (no Catch: they run on the server's thread too).
// The reply skeleton for `query`: ID, RD and the question copied, QR and RA set.
dns::Message ReplyTo(const dns::Message& query, dns::Rcode rcode = dns::Rcode::kNoError);
// The wire form of `message` (up to 64 KiB); a message that does not build is a test bug.
std::vector<uint8_t> Encode(const dns::Message& message);
dns::RdataA A(std::string_view ip);
// The normal answer: one A record `address` (TTL 60) for an IN question, EDNS when the query
// had it.
std::vector<uint8_t> AnswerBytes(const dns::Message& query, const dns::RdataA& address,
                                 dns::Rcode rcode = dns::Rcode::kNoError);

// Scripts. Each ignores what does not parse (no reply).
Script AnswerA(dns::RdataA address);       // AnswerBytes with `address`
Script AnswerRcode(dns::Rcode rcode);      // the question, no records, that rcode
Script Silent();                           // never answers
Script FormErrToEdns(Script otherwise);    // FORMERR without a question to EDNS queries
Script TruncatedOverUdp(Script over_tcp);  // TC (the question only) over UDP
Script Delayed(uint64_t delay_ms, Script script);
// A bad reply first (A 198.51.100.66), then `script`'s.
Script WrongIdFirst(Script script);
Script WrongQuestionFirst(Script script);  // question wrong.example.
Script ForgedFirst(Script script);         // the right reply, from another port
Script GarbageFirst(Script script);        // our ID and QR, a question that runs off the end
// Our ID and question with every letter's case flipped (a spoof that missed the 0x20 case).
Script WrongCaseFirst(Script script);
// `script` answers the question lower-cased: a server that does not echo 0x20 case.
Script Lowercased(Script script);

class FakeDnsServer {
 public:
  struct Options {
    // Each TCP connection answers this many queries, then closes on the next one unanswered
    // (a server closing an idle connection while a query is on its way). 0: no limit.
    size_t tcp_queries_per_connection = 0;
  };

  FakeDnsServer(loop::Loop& loop, Script script, Options options);
  FakeDnsServer(loop::Loop& loop, Script script) : FakeDnsServer(loop, std::move(script), {}) {}
  ~FakeDnsServer();
  FakeDnsServer(const FakeDnsServer&) = delete;
  FakeDnsServer& operator=(const FakeDnsServer&) = delete;

  const loop::SocketAddress& address() const { return address_; }  // UDP and TCP
  void set_script(Script script);
  void set_options(Options options);

  const std::vector<ReceivedQuery>& queries() const { return queries_; }
  std::vector<ReceivedQuery> CopyQueries() const;
  size_t CountQueries(Transport transport) const;
  size_t CountQueries() const;
  size_t garbage_count() const;
  size_t tcp_connections_accepted() const;

 private:
  // The sockets, connections and timers, in the .cc: the tests that include this header see
  // only the script and what it received.
  struct Io;
  using SendFn = std::function<void(const Reply& reply)>;

  void Handle(Transport transport, std::span<const uint8_t> bytes, const loop::SocketAddress& peer,
              const SendFn& send);

  loop::Loop& loop_;
  loop::SocketAddress address_;
  std::unique_ptr<Io> io_;
  std::vector<ReceivedQuery> queries_;  // written under mu_; read without it on the loop

  mutable std::mutex mu_;
  Script script_;    // guarded by mu_
  Options options_;  // guarded by mu_
  size_t udp_count_ = 0;
  size_t tcp_count_ = 0;
  size_t garbage_ = 0;
};

// A FakeDnsServer on a thread and loop of its own, from construction to destruction.
class FakeDnsServerThread {
 public:
  explicit FakeDnsServerThread(Script script, FakeDnsServer::Options options = {});
  ~FakeDnsServerThread();
  FakeDnsServerThread(const FakeDnsServerThread&) = delete;
  FakeDnsServerThread& operator=(const FakeDnsServerThread&) = delete;

  // The thread-safe part of FakeDnsServer's interface.
  const loop::SocketAddress& address() const { return server_->address(); }
  void set_script(Script script) { server_->set_script(std::move(script)); }
  std::vector<ReceivedQuery> CopyQueries() const { return server_->CopyQueries(); }
  size_t CountQueries(Transport transport) const { return server_->CountQueries(transport); }
  size_t CountQueries() const { return server_->CountQueries(); }
  size_t garbage_count() const { return server_->garbage_count(); }

 private:
  void Run(Script script, FakeDnsServer::Options options);

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable started_;
  FakeDnsServer* server_ = nullptr;  // set once the thread has bound; guarded by mu_ until then
  loop::TaskQueue::Poster poster_;
  bool stopping_ = false;  // guarded by mu_
  bool closed_clean_ = false;
};

// A loopback UDP address nothing listens on (bound to 127.0.0.1:0, read back, closed): the
// kernel refuses queries sent to it, and a server the test starts later may bind it.
loop::SocketAddress UnusedUdpAddress(loop::Loop& loop);

}  // namespace kdns::testing

#include "common/loop/udp_receiver_thread.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/loop/loop_test_util.h"
#include "common/loop/socket_test_util.h"
#include "common/loop/udp_socket.h"
#include "common/loop/udp_test_util.h"

namespace kdns::loop {
namespace {

using testing::BindClient;
using testing::BindEcho;
using testing::BindEchoWithFastPath;
using testing::Bytes;
using testing::FastPathProbe;
using testing::Received;
using testing::Text;

TEST_CASE_METHOD(testing::LoopFixture,
                 "A receiver thread answers what its fast path can and hands the rest to the loop",
                 "[loop][udp]") {
  UdpSocket* server_ptr = nullptr;
  FastPathProbe probe;
  auto server = BindEchoWithFastPath(loop, "127.0.0.1:0", server_ptr, probe);
  std::string error;
  CHECK_FALSE(server->StartReceiverThread(probe.Make(), &error));  // once only
  const SocketAddress server_address = server->GetLocalAddress();

  std::vector<Received> received;
  auto client = BindClient(loop, received);
  for (int i = 0; i < 60; ++i) {
    REQUIRE(client->Send(Bytes((i % 3 == 0   ? "q"
                                : i % 3 == 1 ? "f"
                                             : "t") +
                               std::to_string(i)),
                         server_address));
  }
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 60; }));
  std::map<std::string, int> texts;
  for (const auto& r : received) {
    ++texts[r.text];
    CHECK(r.from == server_address);
  }
  CHECK(texts.size() == 60);
  CHECK(texts.count("echo:q0") == 1);
  CHECK(texts.count("fast:f1") == 1);
  CHECK(texts.count("echo:t2") == 1);  // the fast path threw: the loop answered
  CHECK(probe.calls == 60);
  CHECK_FALSE(probe.on_loop_thread);
  // The receiver thread counts a send once sendmmsg returns, which may be after the
  // client read the reply.
  REQUIRE(testing::RunUntil(loop, [&] { return server->stats().sent == 60; }));
  const UdpSocket::Stats stats = server->stats();
  CHECK(stats.received == 60);
  CHECK(stats.fast_answered == 20);
  CHECK(stats.handoff_dropped == 0);
}

// What the test's fast path notes about a datagram it declines.
struct TextNote : UdpHandoffNote {
  std::string text;
};

TEST_CASE_METHOD(
    testing::LoopFixture,
    "A datagram the fast path declines reaches the loop with the note it left, notes reused",
    "[loop][udp]") {
  UdpSocket* server_ptr = nullptr;
  auto server = BindEcho(loop, "127.0.0.1:0", server_ptr);
  std::atomic<int> notes_made{0};
  std::vector<std::string> handed_off;  // "<datagram>=<note>", on the loop thread
  int handed_off_without_note = 0;
  UdpSocket::ReceiverThreadCalls calls;
  calls.fast_path = [](std::span<const uint8_t> datagram, const SocketAddress&,
                       std::span<uint8_t> out, UdpHandoffNote* note) -> size_t {
    const std::string text = Text(datagram);
    if (text[0] == 'f') {
      std::memcpy(out.data(), text.data(), text.size());
      return text.size();
    }
    if (note != nullptr) static_cast<TextNote*>(note)->text = "noted:" + text;
    return 0;
  };
  calls.make_note = [&notes_made] {
    ++notes_made;
    return std::make_unique<TextNote>();
  };
  calls.on_handoff = [&](std::span<const uint8_t> datagram, const SocketAddress& peer,
                         const UdpSocket::ReplyContext& ctx, UdpHandoffNote* note) {
    if (note == nullptr) {
      ++handed_off_without_note;
      return;
    }
    handed_off.push_back(Text(datagram) + "=" + static_cast<TextNote*>(note)->text);
    server_ptr->Send(Bytes("handed:" + Text(datagram)), peer, ctx);
  };
  std::string error;
  const bool started = server->StartReceiverThread(std::move(calls), &error);
  REQUIRE(started);
  CHECK(notes_made == 0);  // made when a datagram needs one, not for an idle thread
  const SocketAddress server_address = server->GetLocalAddress();

  std::vector<Received> received;
  auto client = BindClient(loop, received);
  // Ten rounds of 20 declined datagrams (and as many answered on the thread): a batch and
  // the queue (and the loop's side of it) each hold at most a round (the batch one note
  // more, made for the datagram after its last declined one), so the notes made stay
  // below the datagrams handed off.
  constexpr int kRounds = 10;
  constexpr int kPerRound = 20;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPerRound; ++i) {
      const std::string id = std::to_string(round * kPerRound + i);
      REQUIRE(client->Send(Bytes("q" + id), server_address));
      REQUIRE(client->Send(Bytes("f" + id), server_address));
    }
    REQUIRE(testing::RunUntil(
        loop, [&] { return received.size() == static_cast<size_t>(2 * kPerRound * (round + 1)); }));
  }
  CHECK(handed_off_without_note == 0);
  REQUIRE(handed_off.size() == static_cast<size_t>(kRounds * kPerRound));
  for (const std::string& entry : handed_off) {
    const std::string datagram = entry.substr(0, entry.find('='));
    std::string expected = datagram;
    expected += "=noted:";
    expected += datagram;
    CHECK(entry == expected);
  }
  for (const Received& r : received) {
    CHECK((r.text.starts_with("f") || r.text.starts_with("handed:q")));
  }
  CHECK(notes_made >= 1);
  CHECK(notes_made <= 3 * kPerRound + 1);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "A wildcard-bound receiver thread replies from the address the client queried",
                 "[loop][udp]") {
  UdpSocket* server_ptr = nullptr;
  FastPathProbe probe;
  auto server = BindEchoWithFastPath(loop, "0.0.0.0:0", server_ptr, probe);
  const uint16_t port = server->GetLocalAddress().port();
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  auto target = GENERATE("127.0.0.2", "127.1.2.3");
  auto to = *SocketAddress::FromHostPort(target, port);
  REQUIRE(client->Send(Bytes("fast"), to));  // answered on the receiver thread
  REQUIRE(client->Send(Bytes("slow"), to));  // answered by the loop
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 2; }));
  for (const auto& r : received) CHECK(r.from == to);
}

TEST_CASE("An inherited socket's receiver thread serves and stops without shutting it down",
          "[loop][udp]") {
  Loop loop;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  auto bind_to = *SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, bind_to.sockaddr_ptr(), bind_to.sockaddr_len()) == 0);
  const int kept = dup(fd);  // what a supervisor keeps for the next child
  REQUIRE(kept >= 0);
  const SocketAddress address = internal::LocalAddressOf(fd);
  {
    std::string error;
    UdpSocket* server_ptr = nullptr;
    UdpSocket::Options options;
    options.receiver_wake_ms = 20;
    auto server = UdpSocket::FromFd(
        loop, fd, SocketSharing{.inherited = Inherited::kYes}, options,
        [&](std::span<const uint8_t> d, const SocketAddress& peer,
            const UdpSocket::ReplyContext& ctx) { server_ptr->Send(d, peer, ctx); },
        &error);
    REQUIRE(server != nullptr);
    server_ptr = server.get();
    FastPathProbe probe;
    REQUIRE(server->StartReceiverThread(probe.Make(), &error));
    // Left non-blocking: the thread sleeps in poll, never in a recvmmsg that a kill -9
    // could end with datagrams taken from the socket's next owner.
    CHECK((fcntl(kept, F_GETFL) & O_NONBLOCK) != 0);
    std::vector<Received> received;
    auto client = BindClient(loop, received);
    REQUIRE(client->Send(Bytes("fast"), address));
    REQUIRE(client->Send(Bytes("loop"), address));
    REQUIRE(testing::RunUntil(loop, [&] { return received.size() == 2; }));
    CHECK(server->stats().fast_answered == 1);
    server.reset();  // joins the thread once it sees the stop request

    // The kept socket still receives: the next owner gets a working socket.
    REQUIRE(client->Send(Bytes("still there"), address));
    REQUIRE(testing::RunUntil(loop, [&] { return client->stats().sent == 3; }));
    char buffer[64];
    pollfd ready{.fd = kept, .events = POLLIN, .revents = 0};
    REQUIRE(poll(&ready, 1, 2000) == 1);
    const ssize_t n = recv(kept, buffer, sizeof(buffer), MSG_DONTWAIT);
    REQUIRE(n == 11);
    CHECK(std::string(buffer, 11) == "still there");
  }
  close(kept);
  testing::RequireClosesClean(loop);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "Receiver threads on dups of one socket take turns and answer everything",
                 "[loop][udp]") {
  // Dups of a socket bound here (DnsServer's shared sockets: receivers sleep in recvmmsg)
  // or of one inherited from a parent (receivers sleep in poll).
  const Inherited inherited = GENERATE(Inherited::kNo, Inherited::kYes);
  const SocketSharing sharing{.inherited = inherited,
                              .between_threads = SharedBetweenThreads::kYes};
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  auto bind_to = *SocketAddress::Parse("127.0.0.1:0");
  REQUIRE(bind(fd, bind_to.sockaddr_ptr(), bind_to.sockaddr_len()) == 0);
  const SocketAddress address = internal::LocalAddressOf(fd);
  const int kept = dup(fd);  // to look at the shared file description after the stop
  REQUIRE(kept >= 0);
  UdpSocket::Options options;
  options.receiver_wake_ms = 20;
  options.receiver_group = std::make_shared<UdpReceiverGroup>();
  std::string error;
  std::vector<std::unique_ptr<UdpSocket>> servers;
  std::vector<UdpSocket*> raw(3, nullptr);
  FastPathProbe probe;
  for (size_t i = 0; i < 3; ++i) {
    const int copy = i == 0 ? fd : dup(fd);
    servers.push_back(UdpSocket::FromFd(
        loop, copy, sharing, options,
        [&raw, i](std::span<const uint8_t> d, const SocketAddress& peer,
                  const UdpSocket::ReplyContext& ctx) { raw[i]->Send(d, peer, ctx); },
        &error));
    REQUIRE(servers.back() != nullptr);
    raw[i] = servers.back().get();
    REQUIRE(servers.back()->StartReceiverThread(probe.Make(), &error));
  }
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  // Rounds of 30, so the socket's default receive buffer never overflows.
  for (int round = 0; round < 10; ++round) {
    for (int i = round * 30; i < round * 30 + 30; ++i) {
      REQUIRE(client->Send(Bytes((i % 2 == 0 ? "f" : "q") + std::to_string(i)), address));
    }
    REQUIRE(testing::RunUntil(loop, [&] { return received.size() == size_t(round) * 30 + 30; }));
  }
  std::map<std::string, int> texts;
  for (const auto& r : received) ++texts[r.text];
  CHECK(texts.size() == 300);
  uint64_t answered = 0;
  uint64_t fast = 0;
  for (const auto& server : servers) {
    answered += server->stats().received;
    fast += server->stats().fast_answered;
  }
  CHECK(answered == 300);
  CHECK(fast == 150);
  // Only an inherited socket is left non-blocking, for its receivers to sleep in poll.
  CHECK(((fcntl(kept, F_GETFL) & O_NONBLOCK) != 0) == (inherited == Inherited::kYes));
  servers.clear();  // every thread stops, the leader and the followers alike
  // None shut the socket down: a dup still receives.
  REQUIRE(client->Send(Bytes("still there"), address));
  pollfd ready{.fd = kept, .events = POLLIN, .revents = 0};
  REQUIRE(testing::RunUntil(loop, [&] { return poll(&ready, 1, 0) == 1; }));
  char buffer[64];
  CHECK(recv(kept, buffer, sizeof(buffer), MSG_DONTWAIT) == 11);
  close(kept);
}

TEST_CASE_METHOD(
    testing::LoopFixture,
    "Handoffs wait while receiving is paused; beyond the bound, datagrams wait in the socket",
    "[loop][udp]") {
  std::string error;
  UdpSocket* server_ptr = nullptr;
  UdpSocket::Options options;
  options.max_handoff = 4;
  options.receive_buffer_bytes = 1 << 20;  // room in the socket for all of them
  auto server = UdpSocket::Bind(
      loop, *SocketAddress::Parse("127.0.0.1:0"), options,
      [&](std::span<const uint8_t> d, const SocketAddress& peer,
          const UdpSocket::ReplyContext& ctx) { server_ptr->Send(d, peer, ctx); },
      &error);
  REQUIRE(server != nullptr);
  server_ptr = server.get();
  FastPathProbe probe;
  REQUIRE(server->StartReceiverThread(probe.Make(), &error));
  server->PauseReceiving();
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  constexpr int kQueries = 150;
  for (int i = 0; i < kQueries; ++i)
    REQUIRE(client->Send(Bytes("q" + std::to_string(i)), server->GetLocalAddress()));
  REQUIRE(client->Send(Bytes("fast last"), server->GetLocalAddress()));
  // Paused, nothing drains the queue: the receiver stops once it holds the bound (or one
  // whole batch) and a batch more; the rest, the fast one last among them, wait unread.
  REQUIRE(testing::RunUntil(loop, [&] { return server->stats().received >= 5; }));
  (void)testing::RunUntil(
      loop, [] { return false; }, 100);  // time to read on, if it would
  CHECK(server->stats().received <= 4 + 2 * UdpSocket::kBatchSize);
  CHECK(received.empty());
  CHECK(server->stats().handoff_dropped == 0);
  server->ResumeReceiving();
  REQUIRE(testing::RunUntil(loop, [&] { return received.size() == kQueries + 1; }));
  CHECK(server->stats().received == kQueries + 1);
  CHECK(server->stats().fast_answered == 1);
  CHECK(server->stats().handoff_dropped == 0);
  std::map<std::string, int> texts;
  for (const auto& r : received) ++texts[r.text];
  CHECK(texts.size() == kQueries + 1);
  CHECK(texts.count("fast:fast last") == 1);
}

// What a client saw while the loop was held in its callback: the loop takes "slow0", then
// the receiver hands "slow1" off to the busy loop, then "fast" arrives, which the receiver
// answers itself if it reads on.
struct BusyLoopOutcome {
  bool fast_while_busy = false;
  std::vector<std::string> replies;  // sorted
};

BusyLoopOutcome RunWithBusyLoop(size_t wait_handoffs) {
  BusyLoopOutcome outcome;
  Loop loop;
  {
    std::string error;
    UdpSocket* server_ptr = nullptr;
    std::atomic<bool> in_callback{false};
    std::atomic<bool> release{false};
    UdpSocket::Options options;
    options.receiver_wake_ms = 60'000;  // no time-out: the gate, not the clock, lets go
    options.receiver_wait_handoffs = wait_handoffs;
    auto server = UdpSocket::Bind(
        loop, *SocketAddress::Parse("127.0.0.1:0"), options,
        [&](std::span<const uint8_t> d, const SocketAddress& peer,
            const UdpSocket::ReplyContext& ctx) {
          in_callback = true;
          while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          server_ptr->Send(Bytes("echo:" + Text(d)), peer, ctx);
        },
        &error);
    REQUIRE(server != nullptr);
    server_ptr = server.get();
    FastPathProbe probe;
    REQUIRE(server->StartReceiverThread(probe.Make(), &error));
    const SocketAddress address = server->GetLocalAddress();

    std::vector<std::string> replies;
    bool fast_while_busy = false;
    std::atomic<bool> client_done{false};
    std::atomic<bool> all_sent{true};
    // Made here (its constructor REQUIREs), used on the client thread below, so the loop
    // thread can be held up in a callback while datagrams keep arriving.
    testing::UdpClient client(address);
    std::thread client_thread([&] {
      const auto send = [&](const std::string& text) {
        if (!client.Send(Bytes(text))) all_sent = false;
      };
      // A reply waiting within 20 ms, or "".
      const auto receive = [&] {
        const auto reply = client.Receive(20);
        return reply ? Text(*reply) : std::string();
      };
      // Bounded waits: a broken receiver fails the checks below instead of hanging the run.
      const auto wait_for = [](const auto& ready) {
        for (int i = 0; i < 10'000 && !ready(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      };
      // The loop is idle: this hand-off wakes it, and the loop is then held in its callback.
      send("slow0");
      wait_for([&] { return in_callback.load(); });
      // The loop is busy: the receiver hands this one off and waits for the loop.
      send("slow1");
      wait_for([&] { return probe.calls >= 2; });
      // A datagram the receiver would answer at once, if it were reading.
      send("fast");
      for (int i = 0; i < 10; ++i) {
        std::string reply = receive();
        if (reply == "fast:fast") fast_while_busy = true;
        if (!reply.empty()) replies.push_back(reply);
      }
      release = true;
      for (int i = 0; i < 1000 && replies.size() < 3; ++i) {
        std::string reply = receive();
        if (!reply.empty()) replies.push_back(reply);
      }
      client_done = true;
    });
    // The loop runs (and is held in the callback) until the client is done.
    const bool done = testing::RunUntil(
        loop, [&] { return client_done.load(); }, 30'000);
    client_thread.join();
    CHECK(done);
    CHECK(all_sent);
    CHECK(probe.calls == 3);
    CHECK(server->stats().handoff_dropped == 0);
    std::sort(replies.begin(), replies.end());
    outcome.fast_while_busy = fast_while_busy;
    outcome.replies = replies;
  }
  testing::RequireClosesClean(loop);
  return outcome;
}

TEST_CASE("A receiver that hands off to a busy loop reads again only once the loop is done",
          "[loop][udp]") {
  const BusyLoopOutcome outcome = RunWithBusyLoop(/*wait_handoffs=*/1);
  CHECK_FALSE(outcome.fast_while_busy);
  CHECK(outcome.replies == std::vector<std::string>{"echo:slow0", "echo:slow1", "fast:fast"});
}

TEST_CASE("A hand-off smaller than wait_handoffs does not wait for the busy loop", "[loop][udp]") {
  const BusyLoopOutcome outcome = RunWithBusyLoop(/*wait_handoffs=*/2);
  CHECK(outcome.fast_while_busy);
  CHECK(outcome.replies == std::vector<std::string>{"echo:slow0", "echo:slow1", "fast:fast"});
}

// Yielding to the loop: a server whose loop answers at once only when `answer_now` is set
// (otherwise it keeps the datagram, as a forwarder waits for its upstream), behind
// FastPathProbe's fast path ("f..." answered on the receiver, the rest handed off).
struct YieldingServer {
  explicit YieldingServer(Loop& loop, size_t window) {
    UdpSocket::Options options;
    options.receiver_yield_window = window;
    std::string error;
    socket = UdpSocket::Bind(
        loop, *SocketAddress::Parse("127.0.0.1:0"), options,
        [this](std::span<const uint8_t> datagram, const SocketAddress& peer,
               const UdpSocket::ReplyContext& ctx) {
          ++delivered;
          if (answer_now) socket->Send(Bytes("echo:" + Text(datagram)), peer, ctx);
        },
        &error);
    INFO(error);
    REQUIRE(socket != nullptr);
    REQUIRE(socket->StartReceiverThread(probe.Make(), &error));
    address = socket->GetLocalAddress();
  }

  // Sends `count` datagrams "<prefix><i>" and runs the loop until the loop took them all
  // (`delivered` grew by the ones the fast path did not answer: `expect_delivered`).
  void SendAndDeliver(Loop& loop, UdpSocket& client, const std::string& prefix, int count,
                      int expect_delivered) {
    const int before = delivered;
    for (int i = 0; i < count; ++i) {
      REQUIRE(client.Send(Bytes(prefix + std::to_string(i)), address));
    }
    REQUIRE(testing::RunUntil(loop, [&] { return delivered == before + expect_delivered; }));
  }

  // Sends one window of misses, all handed off: at its end the receiver yields.
  void MissUntilYield(Loop& loop, UdpSocket& client, int window) {
    SendAndDeliver(loop, client, "m", window, window);
    REQUIRE(testing::RunUntil(loop, [&] { return socket->stats().receiver_yields == 1; }));
    CHECK(probe.calls == window);
  }

  FastPathProbe probe;
  std::unique_ptr<UdpSocket> socket;
  SocketAddress address;
  int delivered = 0;
  bool answer_now = false;
};

TEST_CASE_METHOD(testing::LoopFixture,
                 "A receiver that hands off most datagrams leaves the socket to the loop until the "
                 "loop answers most of them itself",
                 "[loop][udp]") {
  YieldingServer server(loop, /*window=*/32);
  std::vector<Received> received;
  auto client = BindClient(loop, received);

  // Misses: every datagram handed off. At the window's end the receiver yields.
  server.MissUntilYield(loop, *client, 32);
  const int fast_calls = server.probe.calls;

  // The loop reads now: what the fast path would answer reaches the loop's callback, and
  // the fast path is not asked. Unanswered on the loop too, so the loop keeps the socket.
  server.SendAndDeliver(loop, *client, "f", 100, 100);
  CHECK(server.probe.calls == fast_calls);
  CHECK(server.socket->stats().receiver_resumes == 0);

  // The loop answers at once: within a few windows it gives the socket back.
  server.answer_now = true;
  for (int round = 0; round < 10 && server.socket->stats().receiver_resumes == 0; ++round) {
    server.SendAndDeliver(loop, *client, "x", 32, 32);
  }
  CHECK(server.socket->stats().receiver_resumes == 1);
  // (The last round's datagrams that came after the resume went to the receiver.)
  const int calls_at_resume = server.probe.calls;

  // The receiver reads again: the fast path answers.
  received.clear();
  for (int i = 0; i < 10; ++i)
    REQUIRE(client->Send(Bytes("f" + std::to_string(i)), server.address));
  // (Echoes of the last "x" datagrams may still come in.)
  const auto fast_replies = [&] {
    return std::count_if(received.begin(), received.end(),
                         [](const Received& r) { return r.text.starts_with("fast:"); });
  };
  REQUIRE(testing::RunUntil(loop, [&] { return fast_replies() == 10; }));
  CHECK(server.probe.calls == calls_at_resume + 10);
  CHECK(server.socket->stats().receiver_yields == 1);
  CHECK(server.socket->stats().handoff_dropped == 0);
}

TEST_CASE_METHOD(testing::LoopFixture,
                 "A receiver without a yield window hands off every miss and keeps the socket",
                 "[loop][udp]") {
  YieldingServer server(loop, /*window=*/0);
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  for (int round = 0; round < 4; ++round) server.SendAndDeliver(loop, *client, "m", 64, 64);
  REQUIRE(testing::RunUntil(loop, [&] { return server.probe.calls == 256; }));
  CHECK(server.socket->stats().receiver_yields == 0);
}

TEST_CASE_METHOD(testing::LoopFixture, "A receiver that left the socket to the loop stops with it",
                 "[loop][udp]") {
  YieldingServer server(loop, /*window=*/16);
  std::vector<Received> received;
  auto client = BindClient(loop, received);
  server.MissUntilYield(loop, *client, 16);
  server.socket->StopReceiverThread();  // joins the sleeping thread
  // Nothing is received after the stop, by the receiver or by the loop.
  const int delivered = server.delivered;
  REQUIRE(client->Send(Bytes("m-late"), server.address));
  CHECK_FALSE(testing::RunUntil(
      loop, [&] { return server.delivered != delivered; }, 100));
  CHECK(server.delivered == delivered);
}

}  // namespace
}  // namespace kdns::loop

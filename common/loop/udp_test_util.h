// Helpers for the UdpSocket, UdpReceiverThread and UdpReceiverGroup tests: an echo server,
// a client that records what it receives, and a FastPath probe.
// Thread: the test's (loop) thread, except FastPathProbe's FastPath (a receiver thread).
#pragma once

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/udp_socket.h"

namespace kdns::loop::testing {

inline std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

inline std::string Text(std::span<const uint8_t> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// An echo server: replies "echo:<datagram>" synchronously, through the reply context.
inline std::unique_ptr<UdpSocket> BindEcho(Loop& loop, const std::string& address,
                                           UdpSocket*& self_out) {
  std::string error;
  auto server = UdpSocket::Bind(
      loop, *SocketAddress::Parse(address), UdpSocket::Options(),
      [&self_out](std::span<const uint8_t> datagram, const SocketAddress& peer,
                  const UdpSocket::ReplyContext& ctx) {
        std::string reply = "echo:" + Text(datagram);
        self_out->Send(Bytes(reply), peer, ctx);
      },
      &error);
  INFO(error);
  REQUIRE(server != nullptr);
  self_out = server.get();
  return server;
}

struct Received {
  std::string text;
  SocketAddress from;
};

inline std::unique_ptr<UdpSocket> BindClient(Loop& loop, std::vector<Received>& received) {
  std::string error;
  auto client = UdpSocket::Bind(
      loop, *SocketAddress::Parse("127.0.0.1:0"), UdpSocket::Options(),
      [&received](std::span<const uint8_t> datagram, const SocketAddress& peer,
                  const UdpSocket::ReplyContext&) {
        received.push_back({Text(datagram), peer});
      },
      &error);
  INFO(error);
  REQUIRE(client != nullptr);
  return client;
}

// The receiver thread's fast path for these tests: answers "f..." with "fast:f...", throws
// for "t...", and leaves everything else to the loop (the echo callback).
struct FastPathProbe {
  std::atomic<int> calls{0};
  std::atomic<bool> on_loop_thread{false};
  std::thread::id loop_thread = std::this_thread::get_id();

  UdpSocket::ReceiverThreadCalls Make() {
    UdpSocket::ReceiverThreadCalls made;
    made.fast_path = [this](std::span<const uint8_t> datagram, const SocketAddress&,
                            std::span<uint8_t> out, UdpHandoffNote*) -> size_t {
      ++calls;
      if (std::this_thread::get_id() == loop_thread) on_loop_thread = true;
      const std::string text = Text(datagram);
      if (!text.empty() && text[0] == 't') throw std::runtime_error("a test exception");
      if (text.empty() || text[0] != 'f') return 0;
      const std::string reply = "fast:" + text;
      std::memcpy(out.data(), reply.data(), reply.size());
      return reply.size();
    };
    return made;
  }
};

// An echo server (BindEcho) whose receiver thread runs `probe`'s fast path.
inline std::unique_ptr<UdpSocket> BindEchoWithFastPath(Loop& loop, const std::string& address,
                                                       UdpSocket*& self_out, FastPathProbe& probe) {
  auto server = BindEcho(loop, address, self_out);
  std::string error;
  const bool started = server->StartReceiverThread(probe.Make(), &error);
  INFO(error);
  REQUIRE(started);
  return server;
}

}  // namespace kdns::loop::testing

#include "common/loop/dns_tcp_framer.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace kdns::loop {
namespace {

using Next = DnsTcpFramer::Next;
using Result = DnsTcpFramer::Result;

// A length-prefixed message of `size` bytes, each byte `fill`.
std::vector<uint8_t> Frame(size_t size, uint8_t fill) {
  std::vector<uint8_t> out{static_cast<uint8_t>(size >> 8), static_cast<uint8_t>(size & 0xff)};
  out.insert(out.end(), size, fill);
  return out;
}

std::vector<uint8_t> Concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

struct Collector {
  std::vector<std::vector<uint8_t>> messages;
  DnsTcpFramer::MessageCallback Callback(Next next = Next::kContinue) {
    return [this, next](std::span<const uint8_t> m) {
      messages.emplace_back(m.begin(), m.end());
      return next;
    };
  }
};

TEST_CASE("DnsTcpFramer delivers messages split at every byte position", "[loop][dns_tcp]") {
  auto stream = Concat({Frame(12, 'a'), Frame(300, 'b'), Frame(65535, 'c')});
  size_t split = GENERATE(range<size_t>(0, 320));
  DnsTcpFramer framer;
  Collector c;
  auto cb = c.Callback();
  std::span<const uint8_t> all(stream);
  REQUIRE(framer.Feed(all.first(split), cb) == Result::kOk);
  REQUIRE(framer.Feed(all.subspan(split), cb) == Result::kOk);
  REQUIRE(c.messages.size() == 3);
  CHECK(c.messages[0] == std::vector<uint8_t>(12, 'a'));
  CHECK(c.messages[1] == std::vector<uint8_t>(300, 'b'));
  CHECK(c.messages[2].size() == 65535);
  CHECK(framer.buffered_bytes() == 0);
}

TEST_CASE("DnsTcpFramer handles a stream fed one byte at a time", "[loop][dns_tcp]") {
  auto stream = Concat({Frame(12, 1), Frame(13, 2), Frame(40, 3)});
  DnsTcpFramer framer;
  Collector c;
  auto cb = c.Callback();
  for (uint8_t byte : stream) {
    REQUIRE(framer.Feed(std::span<const uint8_t>(&byte, 1), cb) == Result::kOk);
    CHECK(framer.buffered_bytes() <= DnsTcpFramer::kMaxFrameBytes);
  }
  REQUIRE(c.messages.size() == 3);
  CHECK(c.messages[2] == std::vector<uint8_t>(40, 3));
}

TEST_CASE("DnsTcpFramer rejects lengths shorter than a DNS header", "[loop][dns_tcp]") {
  size_t length = GENERATE(0, 1, 11);
  DnsTcpFramer framer;
  Collector c;
  auto stream = Concat({Frame(12, 'a'), Frame(length, 'x')});
  CHECK(framer.Feed(stream, c.Callback()) == Result::kBadLength);
  CHECK(c.messages.size() == 1);  // what came before is still delivered
}

TEST_CASE("DnsTcpFramer pauses and resumes on the consumer's request", "[loop][dns_tcp]") {
  auto stream = Concat({Frame(12, 1), Frame(12, 2), Frame(12, 3), Frame(20, 4)});
  DnsTcpFramer framer;
  Collector c;
  std::span<const uint8_t> all(stream);
  // Feed all but the last 5 bytes; the consumer pauses after each message.
  REQUIRE(framer.Feed(all.first(all.size() - 5), c.Callback(Next::kPause)) == Result::kOk);
  CHECK(c.messages.size() == 1);
  CHECK(framer.paused());
  // Bytes fed while paused are kept, not delivered.
  REQUIRE(framer.Feed(all.last(5), c.Callback(Next::kPause)) == Result::kOk);
  CHECK(c.messages.size() == 1);
  REQUIRE(framer.Resume(c.Callback(Next::kPause)) == Result::kOk);
  CHECK(c.messages.size() == 2);
  REQUIRE(framer.Resume(c.Callback()) == Result::kOk);
  REQUIRE(c.messages.size() == 4);
  CHECK(c.messages[3] == std::vector<uint8_t>(20, 4));
  CHECK_FALSE(framer.paused());
  CHECK(framer.buffered_bytes() == 0);
}

TEST_CASE("DnsTcpFramer stops at once when the consumer abandons it", "[loop][dns_tcp]") {
  auto stream = Concat({Frame(12, 1), Frame(12, 2)});
  auto framer = std::make_unique<DnsTcpFramer>();
  int calls = 0;
  auto result = framer->Feed(stream, [&](std::span<const uint8_t>) {
    ++calls;
    framer.reset();
    return Next::kAbandon;
  });
  CHECK(result == Result::kAbandoned);
  CHECK(calls == 1);
}

TEST_CASE("A partial frame keeps the time of its first byte however it trickles",
          "[loop][dns_tcp]") {
  auto frame = Frame(40, 7);
  DnsTcpFramer framer;
  Collector c;
  CHECK_FALSE(framer.partial_frame_since_ms().has_value());
  uint64_t now = 1000;
  for (size_t i = 0; i + 1 < frame.size(); ++i) {
    REQUIRE(framer.Feed(std::span<const uint8_t>(&frame[i], 1), c.Callback(), now) == Result::kOk);
    REQUIRE(framer.partial_frame_since_ms() == std::optional<uint64_t>(1000));
    now += 500;  // each byte much later than the last: the start does not move
  }
  REQUIRE(framer.Feed(std::span<const uint8_t>(&frame.back(), 1), c.Callback(), now) ==
          Result::kOk);
  CHECK(c.messages.size() == 1);
  CHECK_FALSE(framer.partial_frame_since_ms().has_value());
}

TEST_CASE("The next frame's clock starts when its own first byte arrives", "[loop][dns_tcp]") {
  auto first = Frame(12, 1);
  auto second = Frame(12, 2);
  DnsTcpFramer framer;
  Collector c;
  SECTION("in the chunk that completes the previous frame") {
    REQUIRE(framer.Feed(std::span(first).first(5), c.Callback(), 10) == Result::kOk);
    auto rest = Concat({std::vector<uint8_t>(first.begin() + 5, first.end()),
                        std::vector<uint8_t>(second.begin(), second.begin() + 3)});
    REQUIRE(framer.Feed(rest, c.Callback(), 900) == Result::kOk);
    CHECK(c.messages.size() == 1);
    CHECK(framer.partial_frame_since_ms() == std::optional<uint64_t>(900));
  }
  SECTION("after whole frames in one chunk") {
    auto chunk = Concat({first, std::vector<uint8_t>(second.begin(), second.begin() + 1)});
    REQUIRE(framer.Feed(chunk, c.Callback(), 77) == Result::kOk);
    CHECK(c.messages.size() == 1);
    CHECK(framer.partial_frame_since_ms() == std::optional<uint64_t>(77));
  }
}

TEST_CASE("A frame kept while paused starts its clock when reading resumes", "[loop][dns_tcp]") {
  auto chunk = Concat({Frame(12, 1), std::vector<uint8_t>{0, 30, 5}});
  DnsTcpFramer framer;
  Collector c;
  REQUIRE(framer.Feed(chunk, c.Callback(Next::kPause), 100) == Result::kOk);
  REQUIRE(framer.paused());
  // Paused: the client is not the one keeping the frame waiting.
  CHECK_FALSE(framer.partial_frame_since_ms().has_value());
  REQUIRE(framer.Resume(c.Callback(), 60'000) == Result::kOk);
  CHECK(framer.partial_frame_since_ms() == std::optional<uint64_t>(60'000));
}

TEST_CASE("The partial-frame buffer never grows past the frame it holds", "[loop][dns_tcp]") {
  auto frame = Frame(65535, 9);
  DnsTcpFramer framer;
  Collector c;
  size_t chunk = GENERATE(1, 1000, 40'000);
  for (size_t at = 0; at < frame.size(); at += chunk) {
    size_t n = std::min(chunk, frame.size() - at);
    REQUIRE(framer.Feed(std::span(frame).subspan(at, n), c.Callback()) == Result::kOk);
    CHECK(framer.buffer_capacity() <= DnsTcpFramer::kMaxFrameBytes);
  }
  REQUIRE(c.messages.size() == 1);
  CHECK(c.messages[0].size() == 65535);
}

}  // namespace
}  // namespace kdns::loop

#include "common/loop/udp_batch.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/base/resident_testing.h"
#include "common/loop/socket_util.h"

namespace kdns::loop {
namespace {

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A non-blocking UDP socket bound to 127.0.0.1, closed at the end of the test.
struct BoundSocket {
  BoundSocket() {
    std::string error;
    fd = internal::CreateBoundSocket(SOCK_DGRAM, *SocketAddress::Parse("127.0.0.1:0"),
                                     ReusePort::kNo, &error);
    INFO(error);
    REQUIRE(fd >= 0);
    address = internal::LocalAddressOf(fd);
  }
  ~BoundSocket() { close(fd); }
  int fd = -1;
  SocketAddress address;
};

void WaitReadable(int fd) {
  pollfd ready{.fd = fd, .events = POLLIN, .revents = 0};
  REQUIRE(poll(&ready, 1, 2000) == 1);
}

TEST_CASE("A send batch and a receive batch move several datagrams in one call each",
          "[loop][udp]") {
  BoundSocket sender;
  BoundSocket receiver;
  internal::UdpSendBatch send;
  const std::vector<std::string> texts = {"one", "two", "three"};
  for (const auto& text : texts) {
    send.Add(Bytes(text), receiver.address.sockaddr_ptr(), receiver.address.sockaddr_len(),
             nullptr);
  }
  CHECK(send.size() == 3);
  const internal::UdpSendResult result = send.Send(sender.fd);
  CHECK(result.sent == 3);
  CHECK(result.failed == 0);
  CHECK(result.unsent == 0);
  CHECK(send.size() == 0);

  WaitReadable(receiver.fd);
  internal::UdpReceiveBatch batch(512);
  const int n = batch.Receive(receiver.fd, MSG_DONTWAIT);
  REQUIRE(n == 3);
  std::vector<std::string> received;
  int truncated = 0;
  CHECK(batch.ForEachDatagram(
      n,
      [&](size_t index, std::span<const uint8_t> datagram, const SocketAddress& peer,
          const UdpReplyContext& ctx) {
        received.emplace_back(reinterpret_cast<const char*>(datagram.data()), datagram.size());
        CHECK(peer == sender.address);
        CHECK(batch.peer_length(index) == sender.address.sockaddr_len());
        CHECK_FALSE(ctx.destination().has_value());  // bound to an address: no pktinfo
        return true;
      },
      [&] { ++truncated; }));
  CHECK(received == texts);
  CHECK(truncated == 0);
}

TEST_CASE("A receive batch skips datagrams longer than its slots and can stop early",
          "[loop][udp]") {
  BoundSocket sender;
  BoundSocket receiver;
  internal::UdpSendBatch send;
  const std::string long_text(600, 'x');
  const std::vector<std::string> texts = {"a", long_text, "b", "c"};
  for (const auto& text : texts) {
    send.Add(Bytes(text), receiver.address.sockaddr_ptr(), receiver.address.sockaddr_len(),
             nullptr);
  }
  REQUIRE(send.Send(sender.fd).sent == 4);
  WaitReadable(receiver.fd);
  internal::UdpReceiveBatch batch(512);
  const int n = batch.Receive(receiver.fd, MSG_DONTWAIT);
  REQUIRE(n == 4);  // loopback queued all of them before the first read
  std::vector<std::string> received;
  int truncated = 0;
  CHECK_FALSE(batch.ForEachDatagram(
      n,
      [&](size_t, std::span<const uint8_t> datagram, const SocketAddress&, const UdpReplyContext&) {
        received.emplace_back(reinterpret_cast<const char*>(datagram.data()), datagram.size());
        return received.size() < 2;  // "stop after the second"
      },
      [&] { ++truncated; }));
  CHECK(received == std::vector<std::string>{"a", "b"});
  CHECK(truncated == 1);
}

TEST_CASE("A send batch drops a datagram that fails on its own and sends the rest", "[loop][udp]") {
  BoundSocket sender;
  BoundSocket receiver;
  internal::UdpSendBatch send;
  // An IPv6 destination on an IPv4 socket fails on its own (EAFNOSUPPORT or EINVAL).
  const SocketAddress v6 = *SocketAddress::Parse("[::1]:53");
  // The bytes must outlive Send (Add keeps a span).
  const std::string lost = "lost";
  const std::string kept = "kept";
  send.Add(Bytes(lost), v6.sockaddr_ptr(), v6.sockaddr_len(), nullptr);
  send.Add(Bytes(kept), receiver.address.sockaddr_ptr(), receiver.address.sockaddr_len(), nullptr);
  const internal::UdpSendResult result = send.Send(sender.fd);
  CHECK(result.failed == 1);
  CHECK(result.sent == 1);
  CHECK(result.unsent == 0);
  WaitReadable(receiver.fd);
  char buffer[16];
  CHECK(recv(receiver.fd, buffer, sizeof(buffer), MSG_DONTWAIT) == 4);
}

// An idle thread holds batches it never fills: their datagram slots and peer addresses must
// not cost memory until a datagram arrives (udp_batch.h, "Memory").
TEST_CASE("A receive batch's slots become resident only as datagrams fill them", "[loop][udp]") {
  BoundSocket sender;
  BoundSocket receiver;
  constexpr size_t kSlotBytes = 4096;
  internal::UdpReceiveBatch batch(kSlotBytes);
  const uint8_t* slots = batch.datagram(0).data();
  const size_t peer_bytes = kUdpBatchSize * sizeof(sockaddr_storage);
  CHECK(testing::ResidentPages(slots, kUdpBatchSize * kSlotBytes) == 0);

  const std::string text = "one";
  internal::UdpSendBatch send;
  send.Add(Bytes(text), receiver.address.sockaddr_ptr(), receiver.address.sockaddr_len(), nullptr);
  REQUIRE(send.Send(sender.fd).sent == 1);
  WaitReadable(receiver.fd);
  REQUIRE(batch.Receive(receiver.fd, MSG_DONTWAIT) == 1);
  CHECK(testing::ResidentPages(slots, kUdpBatchSize * kSlotBytes) == 1);  // the first slot
  CHECK(testing::ResidentPages(batch.peer(0), peer_bytes) <= 1);
}

}  // namespace
}  // namespace kdns::loop

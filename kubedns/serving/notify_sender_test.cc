#include "kubedns/serving/notify_sender.h"

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/notify.h"
#include "common/dns/testing.h"
#include "common/k8s/decode.h"
#include "common/loop/socket_test_util.h"
#include "common/loop/socket_util.h"

namespace kdns::kubedns {
namespace {

using dns::testing::N;

k8s::Service Web(const std::string& ip) {
  auto service =
      k8s::DecodeService(R"({"metadata":{"name":"web","namespace":"ns"},"spec":{"clusterIP":")" +
                         ip + R"(","ports":[{"name":"http","port":80}]}})");
  REQUIRE(service.ok());
  return service.value();
}

// A UDP socket on 127.0.0.1 standing in for frontend-cache.
struct Receiver {
  Receiver() {
    std::string error;
    fd = loop::internal::CreateBoundSocket(SOCK_DGRAM,
                                           *loop::SocketAddress::FromHostPort("127.0.0.1", 0),
                                           loop::ReusePort::kNo, &error);
    REQUIRE(fd >= 0);
    address = loop::internal::LocalAddressOf(fd);
  }
  ~Receiver() { close(fd); }
  // Every datagram waiting, parsed.
  std::vector<dns::Message> Take() const {
    std::vector<dns::Message> messages;
    std::vector<uint8_t> buffer(1024);
    while (loop::testing::WaitReadable(fd, 200)) {
      const ssize_t n = recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n <= 0) break;
      dns::Message message;
      REQUIRE(dns::ParseMessage(std::span(buffer).first(static_cast<size_t>(n)), &message) ==
              dns::ParseError::kOk);
      messages.push_back(message);
    }
    return messages;
  }
  int fd = -1;
  loop::SocketAddress address;
};

TEST_CASE("NOTIFY goes out for each zone when the records change, and only then",
          "[kubedns][notify]") {
  AnswerConfig config;
  config.zone = N("cluster.local.");
  config.soa_serial_base = 1000;
  Answerer answerer(config);
  SnapshotHolder<Snapshot> snapshots;
  RecordTreeWriter writer;
  Receiver cache;
  loop::Loop loop;
  {
    metrics::Registry registry;
    NotifySender sender(loop, snapshots, answerer, registry, {cache.address});
    std::string error;
    REQUIRE(sender.Start(&error));
    CHECK(sender.CheckNow() == 0);  // nothing published yet

    snapshots.Publish(writer.Publish());
    // Z, in-addr.arpa and ip6.arpa: one NOTIFY each, with the serial of version 1.
    CHECK(sender.CheckNow() == 3);
    std::vector<dns::Message> sent = cache.Take();
    REQUIRE(sent.size() == 3);
    CHECK(sent[0].header.opcode == dns::Opcode::kNotify);
    CHECK(sent[0].questions[0].name == N("cluster.local."));
    CHECK(sent[1].questions[0].name == N("in-addr.arpa."));
    CHECK(sent[2].questions[0].name == N("ip6.arpa."));
    CHECK(dns::SoaSerialOf(sent[0], N("cluster.local.")) == 1001u);

    SECTION("a publish that changed nothing sends nothing") {
      snapshots.Publish(writer.Publish());
      CHECK(sender.CheckNow() == 0);
      CHECK(cache.Take().empty());
    }
    SECTION("many changes between two looks are announced once, with the last serial") {
      writer.UpsertService(Web("10.96.0.5"));
      snapshots.Publish(writer.Publish());
      writer.UpsertService(Web("10.96.0.6"));
      snapshots.Publish(writer.Publish());
      CHECK(sender.CheckNow() == 3);
      sent = cache.Take();
      REQUIRE(sent.size() == 3);
      CHECK(dns::SoaSerialOf(sent[0], N("cluster.local.")) == 1003u);
      CHECK(sender.sent() == 6);
      CHECK(registry.Render().find("kdns_kubedns_notify_sent_total 6") != std::string::npos);
    }
  }
  CHECK(loop.Close());
}

}  // namespace
}  // namespace kdns::kubedns

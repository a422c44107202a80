// dnsload: the UDP tools of the cache benchmarks (test/bench/frontend_cache_bench.sh), in one
// binary because the Makefile builds every test/bench/*_bench.cc and `make bench` runs each
// of them with no arguments.
//
//   dnsload_bench
//       prints what it is and exits 0 (what `make bench` sees).
//   dnsload_bench --serve PORT [--threads T] [--ttl S]
//       a fixed-answer responder on 127.0.0.1:PORT (0: any free port), the machine's
//       ceiling for a UDP DNS server and a cheap upstream: recvmmsg/sendmmsg batches, one
//       SO_REUSEPORT socket and thread per --threads. Every query gets a real answer: its ID,
//       flags and question echoed, AA, one A (192.0.2.1) or AAAA (2001:db8::1) record with
//       TTL S (default 86400) for those types, NOERROR with no records for others, an OPT
//       record when the query had one. Prints "dnsload: serving on 127.0.0.1:PORT".
//   dnsload_bench --load 127.0.0.1:PORT --names FILE [--qps N] [--seconds S]
//                 [--concurrency C] [--sockets K] [--once] [--timeout-ms T]
//       a sendmmsg/recvmmsg load generator over K connected UDP sockets (default 8), asking
//       the names of FILE (dnsperf's format: "name [type]" per line) in order, round and
//       round. --qps 0 (default) is a closed loop keeping C queries outstanding (default
//       100); --qps N an open loop sending N per second whatever comes back. --once asks
//       each name once and stops when all are answered or timed out. Replies are matched by
//       socket and ID and must echo the question. Prints one line of key=value figures:
//       answered qps, lost, rcodes, latency percentiles, and the generator's own CPU.
//
// The shared parts are in dnsload_util.h, the load generator and its report in
// dnsload_client.h (header-only: the Makefile builds each test/bench/*_bench.cc alone); the
// responder is here.
//
// Plain POSIX sockets and one thread per role: nothing here competes with what it measures
// except through the kernel, and the generator reports its own CPU so a reader can tell
#include "test/bench/dnsload_client.h"
#include "test/bench/dnsload_util.h"

namespace kdns::bench::dnsload {
namespace {

// --- the responder -----------------------------------------------------------------------

// Writes the fixed answer to `packet` into `out`; 0 when the packet is dropped (not a
// query, or not parseable). Pure: no I/O.
class FixedAnswer {
 public:
  explicit FixedAnswer(uint32_t ttl_s)
      : ttl_s_(ttl_s),
        a_(dns::RdataA{*IpAddress::Parse("192.0.2.1")}),
        aaaa_(dns::RdataAaaa{*IpAddress::Parse("2001:db8::1")}) {}

  size_t Write(std::span<const uint8_t> packet, std::span<uint8_t> out) const {
    dns::Query query;
    if (dns::ParseQuery(packet, &query) != dns::ParseError::kOk || query.header.qr) return 0;
    dns::MessageBuilder builder(
        out, query.edns ? query.edns->PayloadSize() : dns::kMaxUdpSizeWithoutEdns);
    if (builder.StartResponse(query) != dns::BuildError::kOk) return 0;
    builder.header().aa = true;
    if (query.edns && builder.SetEdns(dns::EdnsView{}) != dns::BuildError::kOk) return 0;
    if (query.qclass == dns::RrClass::kIn &&
        (query.qtype == dns::RrType::kA || query.qtype == dns::RrType::kAaaa)) {
      builder.BeginRrset(dns::Section::kAnswer);
      builder.Add(query.qname, query.qtype, query.qclass, ttl_s_,
                  query.qtype == dns::RrType::kA ? a_ : aaaa_);
      (void)builder.EndRrset();  // a record this small always fits
    }
    return builder.Finish().size();
  }

 private:
  uint32_t ttl_s_;
  dns::Rdata a_;
  dns::Rdata aaaa_;
};

// One socket, one thread: a batch in (blocking for the first datagram, then whatever is
// queued), a batch of answers out.
void ServeSocket(int fd, const FixedAnswer& answer) {
  std::vector<std::array<uint8_t, kMaxDatagram>> in(kBatch);
  std::vector<std::array<uint8_t, kMaxAnswer>> out(kBatch);
  std::array<sockaddr_storage, kBatch> peers;
  std::array<iovec, kBatch> in_iov;
  std::array<iovec, kBatch> out_iov;
  std::array<mmsghdr, kBatch> in_msgs;
  std::array<mmsghdr, kBatch> out_msgs;
  for (size_t i = 0; i < kBatch; ++i) in_iov[i] = {in[i].data(), in[i].size()};
  while (true) {
    for (size_t i = 0; i < kBatch; ++i) {
      in_msgs[i] = {};
      in_msgs[i].msg_hdr.msg_name = &peers[i];
      in_msgs[i].msg_hdr.msg_namelen = sizeof(peers[i]);
      in_msgs[i].msg_hdr.msg_iov = &in_iov[i];
      in_msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int received = recvmmsg(fd, in_msgs.data(), kBatch, MSG_WAITFORONE, nullptr);
    if (received < 0) {
      if (errno == EINTR) continue;
      Fail(std::string("recvmmsg: ") + std::strerror(errno));
    }
    size_t replies = 0;
    for (int i = 0; i < received; ++i) {
      size_t size = answer.Write({in[i].data(), in_msgs[i].msg_len}, out[replies]);
      if (size == 0) continue;
      out_iov[replies] = {out[replies].data(), size};
      out_msgs[replies] = {};
      out_msgs[replies].msg_hdr.msg_name = &peers[i];
      out_msgs[replies].msg_hdr.msg_namelen = in_msgs[i].msg_hdr.msg_namelen;
      out_msgs[replies].msg_hdr.msg_iov = &out_iov[replies];
      out_msgs[replies].msg_hdr.msg_iovlen = 1;
      ++replies;
    }
    // A full socket buffer drops the rest of the batch, as a loaded server would.
    for (size_t sent = 0; sent < replies;) {
      int n = sendmmsg(fd, out_msgs.data() + sent, replies - sent, 0);
      if (n <= 0) break;
      sent += n;
    }
  }
}

int Serve(const Arguments& args) {
  const auto port = static_cast<uint16_t>(args.Number("serve", 0));
  const auto threads = static_cast<size_t>(std::max(1.0, args.Number("threads", 1)));
  const FixedAnswer answer(static_cast<uint32_t>(args.Number("ttl", 86400)));

  std::vector<int> fds;
  sockaddr_in address = LoopbackAddress(port);
  for (size_t i = 0; i < threads; ++i) {
    int fd = UdpSocket();
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      Fail("bind 127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + ": " +
           std::strerror(errno));
    }
    socklen_t len = sizeof(address);
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len);  // the port, when 0
    fds.push_back(fd);
  }
  std::printf("dnsload: serving on 127.0.0.1:%u with %zu thread(s)\n", ntohs(address.sin_port),
              threads);
  std::fflush(stdout);
  std::vector<std::thread> workers;
  for (size_t i = 1; i < fds.size(); ++i)
    workers.emplace_back(ServeSocket, fds[i], std::cref(answer));
  ServeSocket(fds[0], answer);  // until killed
  return 0;
}

}  // namespace
}  // namespace kdns::bench::dnsload

int main(int argc, char** argv) {
  namespace dnsload = kdns::bench::dnsload;
  const dnsload::Arguments args(argc, argv);
  if (args.Has("serve")) return dnsload::Serve(args);
  if (args.Has("load")) return dnsload::Load(args);
  std::printf(
      "dnsload_bench: a UDP load generator and fixed-answer responder, not a benchmark on its "
      "own; test/bench/frontend_cache_bench.sh runs it (--serve PORT | --load ADDR:PORT "
      "--names FILE ...)\n");
  return 0;
}

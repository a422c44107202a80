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
// Plain POSIX sockets and one thread per role: nothing here competes with what it measures
// except through the kernel, and the generator reports its own CPU so a reader can tell
// which side was the bottleneck.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/types.h"

namespace {

using kdns::IpAddress;
namespace dns = kdns::dns;

constexpr size_t kBatch = 64;          // datagrams per recvmmsg/sendmmsg call
constexpr size_t kMaxDatagram = 4096;  // receive buffer per datagram
constexpr size_t kMaxAnswer = 1232;    // what the responder writes at most
constexpr size_t kIdSpace = 65536;     // DNS IDs per socket
constexpr int kSocketBufferBytes = 4 << 20;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "dnsload: %s\n", message.c_str());
  std::exit(2);
}

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

sockaddr_in LoopbackAddress(uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

int UdpSocket() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail(std::string("socket: ") + std::strerror(errno));
  // Best effort: unprivileged processes are capped at net.core.[rw]mem_max.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  return fd;
}

// --- command line ----------------------------------------------------------------------

// "--name value" and "--name=value"; flags without a value map to "".
class Arguments {
 public:
  Arguments(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (!arg.starts_with("--")) Fail("unexpected argument \"" + std::string(arg) + "\"");
      arg.remove_prefix(2);
      size_t equals = arg.find('=');
      if (equals != std::string_view::npos) {
        values_.emplace_back(std::string(arg.substr(0, equals)),
                             std::string(arg.substr(equals + 1)));
      } else if (IsFlag(arg) || i + 1 == argc) {
        values_.emplace_back(std::string(arg), "");
      } else {
        values_.emplace_back(std::string(arg), argv[++i]);
      }
    }
  }

  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  std::string String(std::string_view name, const std::string& fallback = "") const {
    const std::string* value = Find(name);
    return value ? *value : fallback;
  }
  double Number(std::string_view name, double fallback) const {
    const std::string* value = Find(name);
    if (value == nullptr) return fallback;
    char* end = nullptr;
    double number = std::strtod(value->c_str(), &end);
    if (value->empty() || *end != '\0' || number < 0) {
      Fail("--" + std::string(name) + ": \"" + *value + "\" is not a non-negative number");
    }
    return number;
  }

 private:
  static bool IsFlag(std::string_view name) { return name == "once"; }
  const std::string* Find(std::string_view name) const {
    for (const auto& [key, value] : values_) {
      if (key == name) return &value;
    }
    return nullptr;
  }
  std::vector<std::pair<std::string, std::string>> values_;
};

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

// --- the load generator --------------------------------------------------------------------

// The queries to send, built once: wire bytes with ID 0 and RD, one after another.
class QuerySet {
 public:
  static QuerySet Load(const std::string& path) {
    std::ifstream file(path);
    if (!file) Fail("cannot read " + path);
    QuerySet set;
    std::string line;
    std::array<uint8_t, 512> buffer;
    while (std::getline(file, line)) {
      std::istringstream words(line);
      std::string name_text, type_text = "A";
      if (!(words >> name_text) || name_text.starts_with("#")) continue;
      words >> type_text;
      std::optional<dns::Name> name = dns::Name::FromText(name_text);
      std::optional<dns::RrType> type = dns::RrTypeFromText(type_text);
      if (!name || !type) Fail(std::string(path).append(": bad line \"").append(line).append("\""));
      dns::MessageBuilder builder(buffer);
      builder.header().rd = true;
      if (builder.AddQuestion(*name, *type, dns::RrClass::kIn) != dns::BuildError::kOk) {
        Fail(std::string(path).append(": cannot encode \"").append(line).append("\""));
      }
      std::span<const uint8_t> wire = builder.Finish();
      set.offsets_.push_back(set.bytes_.size());
      set.bytes_.insert(set.bytes_.end(), wire.begin(), wire.end());
    }
    if (set.offsets_.empty()) Fail(path + ": no names");
    set.offsets_.push_back(set.bytes_.size());
    return set;
  }

  size_t size() const { return offsets_.size() - 1; }
  std::span<const uint8_t> Query(size_t i) const {
    return {bytes_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
  }
  // The question section: everything after the header.
  std::span<const uint8_t> Question(size_t i) const { return Query(i).subspan(dns::kHeaderSize); }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<size_t> offsets_;
};

struct LoadOptions {
  sockaddr_in target{};
  std::string target_text;
  double qps = 0;  // 0: closed loop
  double seconds = 10;
  size_t concurrency = 100;
  size_t sockets = 8;
  bool once = false;
  uint64_t timeout_ns = 1'000'000'000;
};

struct Tally {
  uint64_t sent = 0;
  uint64_t answered = 0;
  uint64_t lost = 0;        // not answered within the timeout
  uint64_t mismatched = 0;  // a datagram that answers nothing we have in flight
  uint64_t truncated = 0;
  std::array<uint64_t, 16> rcodes{};
  std::vector<uint32_t> latencies_ns;
};

// One connected socket and the queries it has in flight, indexed by ID. IDs are handed out
// in order (sequence number mod 65536), so the oldest query in flight is found by walking
// forward from `oldest_` and timeouts need no scan.
class Flow {
 public:
  Flow(const LoadOptions& options, const QuerySet& queries, Tally* tally)
      : fd_(UdpSocket()), options_(options), queries_(queries), tally_(tally), slots_(kIdSpace) {
    if (connect(fd_, reinterpret_cast<const sockaddr*>(&options.target), sizeof(options.target)) !=
        0) {
      Fail("connect " + options.target_text + ": " + std::strerror(errno));
    }
    for (size_t i = 0; i < kBatch; ++i) {
      out_iov_[i] = {out_[i].data(), 0};
      in_iov_[i] = {in_[i].data(), in_[i].size()};
    }
  }
  Flow(const Flow&) = delete;
  Flow& operator=(const Flow&) = delete;
  ~Flow() { close(fd_); }

  int fd() const { return fd_; }
  size_t in_flight() const { return in_flight_; }

  // Sends up to `count` queries (at most one batch), taking query indexes from *next_query;
  // returns how many were taken. One the socket refuses (buffer full) is lost at its timeout.
  size_t Send(size_t count, uint64_t now_ns, size_t* next_query) {
    count = std::min(count, kBatch);
    for (size_t i = 0; i < count; ++i) {
      if (next_seq_ - oldest_ == kIdSpace) Expire(oldest_, now_ns, /*force=*/true);
      const size_t index = *next_query % queries_.size();
      ++*next_query;
      std::span<const uint8_t> query = queries_.Query(index);
      std::memcpy(out_[i].data(), query.data(), query.size());
      const uint16_t id = static_cast<uint16_t>(next_seq_);
      out_[i][0] = id >> 8;
      out_[i][1] = id & 0xff;
      out_iov_[i].iov_len = query.size();
      out_msgs_[i] = {};
      out_msgs_[i].msg_hdr.msg_iov = &out_iov_[i];
      out_msgs_[i].msg_hdr.msg_iovlen = 1;
      slots_[id] = {now_ns, static_cast<uint32_t>(index), true};
      ++next_seq_;
    }
    size_t sent = 0;
    while (sent < count) {
      int n = sendmmsg(fd_, out_msgs_.data() + sent, count - sent, MSG_DONTWAIT);
      if (n <= 0) break;  // socket buffer full: the rest count as lost at their timeout
      sent += n;
    }
    in_flight_ += count;
    tally_->sent += count;
    return count;
  }

  // Reads every reply queued on the socket.
  void Receive(uint64_t now_ns) {
    while (true) {
      for (size_t i = 0; i < kBatch; ++i) {
        in_msgs_[i] = {};
        in_msgs_[i].msg_hdr.msg_iov = &in_iov_[i];
        in_msgs_[i].msg_hdr.msg_iovlen = 1;
      }
      int n = recvmmsg(fd_, in_msgs_.data(), kBatch, MSG_DONTWAIT, nullptr);
      if (n <= 0) return;
      for (int i = 0; i < n; ++i) Match({in_[i].data(), in_msgs_[i].msg_len}, now_ns);
      if (static_cast<size_t>(n) < kBatch) return;
    }
  }

  // Counts as lost what has waited longer than the timeout.
  void ExpireOld(uint64_t now_ns) {
    while (oldest_ < next_seq_) {
      if (!Expire(oldest_, now_ns, /*force=*/false)) return;
    }
  }

 private:
  struct Slot {
    uint64_t sent_ns = 0;
    uint32_t query_index = 0;
    bool in_flight = false;
  };

  // Drops the slot of sequence `seq` if answered, timed out or forced, and advances
  // `oldest_` past it; false when it must still wait.
  bool Expire(uint64_t seq, uint64_t now_ns, bool force) {
    Slot& slot = slots_[seq % kIdSpace];
    if (slot.in_flight) {
      if (!force && now_ns - slot.sent_ns < options_.timeout_ns) return false;
      slot.in_flight = false;
      --in_flight_;
      ++tally_->lost;
    }
    ++oldest_;
    return true;
  }

  void Match(std::span<const uint8_t> reply, uint64_t now_ns) {
    if (reply.size() < dns::kHeaderSize) {
      ++tally_->mismatched;
      return;
    }
    const uint16_t id = static_cast<uint16_t>(reply[0] << 8 | reply[1]);
    Slot& slot = slots_[id];
    const bool is_response = (reply[2] & 0x80) != 0;
    if (!slot.in_flight || !is_response ||
        !SameQuestion(reply.subspan(dns::kHeaderSize), queries_.Question(slot.query_index))) {
      ++tally_->mismatched;
      return;
    }
    slot.in_flight = false;
    --in_flight_;
    ++tally_->answered;
    ++tally_->rcodes[reply[3] & 0x0f];
    if (reply[2] & 0x02) ++tally_->truncated;
    tally_->latencies_ns.push_back(
        static_cast<uint32_t>(std::min<uint64_t>(now_ns - slot.sent_ns, UINT32_MAX)));
  }

  // The reply's question is ours (QDCOUNT aside), ignoring ASCII case.
  static bool SameQuestion(std::span<const uint8_t> reply, std::span<const uint8_t> question) {
    if (reply.size() < question.size()) return false;
    for (size_t i = 0; i < question.size(); ++i) {
      uint8_t a = reply[i], b = question[i];
      if (a != b && ((a | 0x20) != (b | 0x20) || (a | 0x20) < 'a' || (a | 0x20) > 'z')) {
        return false;
      }
    }
    return true;
  }

  int fd_;
  const LoadOptions& options_;
  const QuerySet& queries_;
  Tally* tally_;
  std::vector<Slot> slots_;
  uint64_t next_seq_ = 0;
  uint64_t oldest_ = 0;
  size_t in_flight_ = 0;

  std::array<std::array<uint8_t, 512>, kBatch> out_;
  std::array<iovec, kBatch> out_iov_;
  std::array<mmsghdr, kBatch> out_msgs_;
  std::array<std::array<uint8_t, kMaxDatagram>, kBatch> in_;
  std::array<iovec, kBatch> in_iov_;
  std::array<mmsghdr, kBatch> in_msgs_;
};

// Drives the flows: a closed loop (a window of outstanding queries per flow) or an open
// loop (a schedule of N per second spread over the flows), until the time is up or, with
// --once, every name has been asked and settled.
class LoadGenerator {
 public:
  LoadGenerator(const LoadOptions& options, const QuerySet& queries)
      : options_(options), queries_(queries) {
    for (size_t i = 0; i < options.sockets; ++i) {
      flows_.push_back(std::make_unique<Flow>(options, queries, &tally_));
      pollfds_.push_back({flows_.back()->fd(), POLLIN, 0});
    }
    tally_.latencies_ns.reserve(1 << 20);
  }

  // Returns the tally and the measured interval.
  Tally Run(double* elapsed_s) {
    const uint64_t start_ns = NowNs();
    const uint64_t deadline_ns = start_ns + static_cast<uint64_t>(options_.seconds * 1e9);
    const bool drain = options_.once || options_.qps > 0;
    uint64_t sending_done_ns = 0;
    while (true) {
      uint64_t now_ns = NowNs();
      const bool sending =
          now_ns < deadline_ns && !(options_.once && next_query_ >= queries_.size());
      if (!sending && sending_done_ns == 0) sending_done_ns = std::min(now_ns, deadline_ns);
      // A timed closed loop ends at the deadline; the others wait for the last answers.
      if (!sending &&
          (!drain || InFlight() == 0 || now_ns >= sending_done_ns + options_.timeout_ns)) {
        break;
      }
      if (sending) SendDue(now_ns, start_ns);
      Wait(sending ? NextWakeNs(now_ns, start_ns) : now_ns + 1'000'000);
      now_ns = NowNs();
      for (size_t i = 0; i < flows_.size(); ++i) {
        // POLLERR: an ICMP error (nobody listening), which the read clears.
        if (pollfds_[i].revents & (POLLIN | POLLERR)) flows_[i]->Receive(now_ns);
      }
      if (now_ns - last_expiry_ns_ > 10'000'000) {
        for (auto& flow : flows_) flow->ExpireOld(now_ns);
        last_expiry_ns_ = now_ns;
      }
    }
    if (drain) {
      for (auto& flow : flows_) flow->ExpireOld(UINT64_MAX);  // what never came is lost
    }
    // --once ends with the last answer; a timed run with the deadline.
    const uint64_t end_ns = options_.once ? NowNs() : deadline_ns;
    *elapsed_s = (end_ns - start_ns) / 1e9;
    return std::move(tally_);
  }

 private:
  size_t InFlight() const {
    size_t total = 0;
    for (const auto& flow : flows_) total += flow->in_flight();
    return total;
  }

  size_t Remaining() const {
    return options_.once ? queries_.size() - std::min(next_query_, queries_.size()) : SIZE_MAX;
  }

  void SendDue(uint64_t now_ns, uint64_t start_ns) {
    if (options_.qps == 0) {
      // Closed loop: top up each flow's share of the window.
      for (size_t i = 0; i < flows_.size(); ++i) {
        const size_t window = options_.concurrency / flows_.size() +
                              (i < options_.concurrency % flows_.size() ? 1 : 0);
        while (flows_[i]->in_flight() < window && Remaining() > 0) {
          flows_[i]->Send(std::min(window - flows_[i]->in_flight(), Remaining()), now_ns,
                          &next_query_);
        }
      }
      return;
    }
    // Open loop: whatever the schedule says is due, round robin over the flows.
    const auto due = static_cast<uint64_t>((now_ns - start_ns) / 1e9 * options_.qps);
    while (scheduled_ < due && Remaining() > 0) {
      const size_t count = std::min<uint64_t>({due - scheduled_, kBatch, Remaining()});
      flows_[round_robin_++ % flows_.size()]->Send(count, now_ns, &next_query_);
      scheduled_ += count;
    }
  }

  uint64_t NextWakeNs(uint64_t now_ns, uint64_t start_ns) const {
    if (options_.qps == 0) return now_ns + 10'000'000;  // replies wake us
    // The time the next query is due.
    return start_ns + static_cast<uint64_t>((scheduled_ + 1) / options_.qps * 1e9);
  }

  void Wait(uint64_t until_ns) {
    const uint64_t now_ns = NowNs();
    const uint64_t wait_ns = until_ns > now_ns ? until_ns - now_ns : 0;
    timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000),
                     static_cast<long>(wait_ns % 1'000'000'000)};
    if (ppoll(pollfds_.data(), pollfds_.size(), &timeout, nullptr) < 0 && errno != EINTR) {
      Fail(std::string("ppoll: ") + std::strerror(errno));
    }
  }

  const LoadOptions& options_;
  const QuerySet& queries_;
  Tally tally_;
  std::vector<std::unique_ptr<Flow>> flows_;
  std::vector<pollfd> pollfds_;
  size_t next_query_ = 0;
  uint64_t scheduled_ = 0;
  size_t round_robin_ = 0;
  uint64_t last_expiry_ns_ = 0;
};

double Percentile(std::vector<uint32_t>* values, double fraction) {
  if (values->empty()) return 0;
  const size_t rank = std::min(values->size() - 1, static_cast<size_t>(fraction * values->size()));
  std::nth_element(values->begin(), values->begin() + rank, values->end());
  return (*values)[rank] / 1000.0;
}

LoadOptions ParseLoadOptions(const Arguments& args) {
  LoadOptions options;
  options.target_text = args.String("load");
  const size_t colon = options.target_text.rfind(':');
  long port = 0;
  if (colon != std::string::npos) {
    char* end = nullptr;
    port = std::strtol(options.target_text.c_str() + colon + 1, &end, 10);
    if (*end != '\0') port = 0;
  }
  if (port <= 0 || port > 65535 ||
      inet_pton(AF_INET, options.target_text.substr(0, colon).c_str(), &options.target.sin_addr) !=
          1) {
    Fail("--load: \"" + options.target_text + "\" is not IPv4:PORT");
  }
  options.target.sin_family = AF_INET;
  options.target.sin_port = htons(static_cast<uint16_t>(port));
  options.qps = args.Number("qps", 0);
  options.seconds = args.Number("seconds", 10);
  options.concurrency = static_cast<size_t>(std::max(1.0, args.Number("concurrency", 100)));
  options.sockets = static_cast<size_t>(std::max(1.0, args.Number("sockets", 8)));
  options.once = args.Has("once");
  options.timeout_ns = static_cast<uint64_t>(args.Number("timeout-ms", 1000) * 1e6);
  if (!args.Has("names")) Fail("--load needs --names FILE");
  return options;
}

int Load(const Arguments& args) {
  const LoadOptions options = ParseLoadOptions(args);
  const QuerySet queries = QuerySet::Load(args.String("names"));
  LoadGenerator generator(options, queries);

  const double cpu_before_s = CpuSeconds();
  double elapsed_s = 0;
  Tally tally = generator.Run(&elapsed_s);
  const double cpu_s = CpuSeconds() - cpu_before_s;

  const auto rcode = [&](dns::Rcode code) { return tally.rcodes[static_cast<size_t>(code)]; };
  const uint64_t other_rcodes = tally.answered - rcode(dns::Rcode::kNoError) -
                                rcode(dns::Rcode::kNxDomain) - rcode(dns::Rcode::kServFail);
  std::printf(
      "dnsload: target=%s mode=%s seconds=%.2f sent=%" PRIu64 " answered=%" PRIu64 " lost=%" PRIu64
      " mismatched=%" PRIu64 " qps=%.0f noerror=%" PRIu64 " nxdomain=%" PRIu64 " servfail=%" PRIu64
      " other_rcode=%" PRIu64 " truncated=%" PRIu64
      " p50_us=%.1f p99_us=%.1f p999_us=%.1f client_cpu_s=%.2f client_us_per_query=%.2f\n",
      options.target_text.c_str(), options.qps == 0 ? "closed" : "rate", elapsed_s, tally.sent,
      tally.answered, tally.lost, tally.mismatched, elapsed_s > 0 ? tally.answered / elapsed_s : 0,
      rcode(dns::Rcode::kNoError), rcode(dns::Rcode::kNxDomain), rcode(dns::Rcode::kServFail),
      other_rcodes, tally.truncated, Percentile(&tally.latencies_ns, 0.50),
      Percentile(&tally.latencies_ns, 0.99), Percentile(&tally.latencies_ns, 0.999), cpu_s,
      tally.answered > 0 ? cpu_s * 1e6 / tally.answered : 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments args(argc, argv);
  if (args.Has("serve")) return Serve(args);
  if (args.Has("load")) return Load(args);
  std::printf(
      "dnsload_bench: a UDP load generator and fixed-answer responder, not a benchmark on its "
      "own; test/bench/frontend_cache_bench.sh runs it (--serve PORT | --load ADDR:PORT "
      "--names FILE ...)\n");
  return 0;
}

// dnsload's load generator (`--load`, see dnsload_bench.cc) and its one-line report: the
// query set, the flows over connected UDP sockets, the open- and closed-loop schedules and
// the figures printed. Header-only, because the Makefile builds each test/bench/*_bench.cc
// as one binary. Thread: the generator runs on the calling thread.
#pragma once

#include "test/bench/dnsload_util.h"

namespace kdns::bench::dnsload {

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

inline double Percentile(std::vector<uint32_t>* values, double fraction) {
  if (values->empty()) return 0;
  const size_t rank = std::min(values->size() - 1, static_cast<size_t>(fraction * values->size()));
  std::nth_element(values->begin(), values->begin() + rank, values->end());
  return (*values)[rank] / 1000.0;
}

inline LoadOptions ParseLoadOptions(const Arguments& args) {
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

inline int Load(const Arguments& args) {
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

}  // namespace kdns::bench::dnsload

// Micro-benchmark of the DNS codec's hot paths: ParseQuery of a typical query with EDNS,
// building typical responses (one A record; ten SRV records with their A records), a full
// ParseMessage of the SRV response, and --loadbalance=round_robin's rotation of a cache
// hit (common/dns/loadbalance.h) on one address, three and ten. Prints ns per operation;
// not a test, no thresholds.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/dns/builder.h"
#include "common/dns/loadbalance.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"

namespace {

using namespace kdns::dns;

// Keeps the compiler from dropping work whose result is otherwise unused.
template <typename T>
void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

template <typename Fn>
void Measure(const char* label, size_t iterations, Fn&& fn) {
  for (size_t i = 0; i < iterations / 10; ++i) fn();  // warm up
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < iterations; ++i) fn();
  auto elapsed = std::chrono::steady_clock::now() - start;
  double ns = std::chrono::duration<double, std::nano>(elapsed).count() / iterations;
  std::printf("%-48s %9.1f ns/op  (%zu iterations)\n", label, ns, iterations);
}

Name MustName(const char* text) { return *Name::FromText(text); }

}  // namespace

int main() {
  const Name srv_name = MustName("_https._tcp.web.default.svc.cluster.local.");

  const std::vector<uint8_t> query_bytes =
      kdns::dns::testing::QuerySpec("kubernetes.default.svc.cluster.local.")
          .Id(0x1234)
          .Edns()
          .Bytes();
  Query query;
  if (ParseQuery(query_bytes, &query) != ParseError::kOk) return 1;

  Measure("ParseQuery (A, EDNS)", 5'000'000, [&] {
    Query parsed;
    ParseError error = ParseQuery(query_bytes, &parsed);
    DoNotOptimize(error);
    DoNotOptimize(parsed.qtype);
  });

  std::vector<uint8_t> out(kMaxMessageSize);
  const Rdata a_rdata = RdataA{*kdns::IpAddress::Parse("10.96.0.1")};
  Measure("Build A response (compressed, EDNS)", 5'000'000, [&] {
    MessageBuilder builder(out, query.edns->PayloadSize());
    (void)builder.StartResponse(query);
    (void)builder.SetEdns(EdnsView{});
    builder.header().aa = true;
    builder.BeginRrset(Section::kAnswer);
    builder.Add(query.qname, RrType::kA, RrClass::kIn, 30, a_rdata);
    (void)builder.EndRrset();
    auto bytes = builder.Finish();
    DoNotOptimize(bytes.size());
  });

  std::vector<Name> targets;
  std::vector<Rdata> srv_rdata;
  std::vector<Rdata> target_a;
  for (int i = 0; i < 10; ++i) {
    targets.push_back(*Name::FromLabels({"10-0-0-" + std::to_string(i)}, srv_name.StripLeft(2)));
    srv_rdata.push_back(RdataSrv{10, 10, 443, targets.back()});
    target_a.push_back(RdataA{*kdns::IpAddress::Parse("10.0.0." + std::to_string(i))});
  }
  size_t srv_size = 0;
  Measure("Build SRV response (10 SRV + 10 A additional)", 500'000, [&] {
    MessageBuilder builder(out, kMaxMessageSize);
    builder.header().id = 1;
    builder.header().qr = true;
    (void)builder.AddQuestion(srv_name, RrType::kSrv, RrClass::kIn);
    (void)builder.SetEdns(EdnsView{});
    builder.BeginRrset(Section::kAnswer);
    for (const Rdata& rdata : srv_rdata)
      builder.Add(srv_name, RrType::kSrv, RrClass::kIn, 30, rdata);
    (void)builder.EndRrset();
    for (size_t i = 0; i < targets.size(); ++i) {
      builder.BeginRrset(Section::kAdditional);
      builder.Add(targets[i], RrType::kA, RrClass::kIn, 30, target_a[i]);
      (void)builder.EndRrset();
    }
    srv_size = builder.Finish().size();
    DoNotOptimize(srv_size);
  });
  std::vector<uint8_t> srv_bytes(out.begin(), out.begin() + static_cast<long>(srv_size));

  Measure("ParseMessage of that SRV response", 200'000, [&] {
    Message message;
    ParseError error = ParseMessage(srv_bytes, &message);
    DoNotOptimize(error);
    DoNotOptimize(message.answers.size());
  });
  // A cache hit's copy, rotated in place as DnsHandler::Balance does: one A record (the
  // header counts end it), a headless Service of three and of ten endpoints.
  for (const size_t addresses : {size_t{1}, size_t{3}, size_t{10}}) {
    MessageBuilder builder(out, query.edns->PayloadSize());
    (void)builder.StartResponse(query);
    (void)builder.SetEdns(EdnsView{});
    builder.BeginRrset(Section::kAnswer);
    for (size_t i = 0; i < addresses; ++i) {
      builder.Add(query.qname, RrType::kA, RrClass::kIn, 30,
                  RdataA{*kdns::IpAddress::Parse("10.244.0." + std::to_string(i + 1))});
    }
    (void)builder.EndRrset();
    const auto built = builder.Finish();
    std::vector<uint8_t> answer(built.begin(), built.end());
    const std::string label = "RotateAddressRrsets, " + std::to_string(addresses) + " A";
    uint32_t turn = 0;
    Measure(label.c_str(), 2'000'000, [&] {
      DoNotOptimize(RotateAddressRrsets(answer, ++turn));
      DoNotOptimize(answer[answer.size() - 1]);
    });
  }
  std::printf("query %zu bytes, SRV response %zu bytes\n", query_bytes.size(), srv_bytes.size());
  return 0;
}

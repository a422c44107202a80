// Benchmark of kubedns's record tree and answerer, in process (no sockets, no JSON).
//
// Synthetic clusters are built directly as k8s::Service / k8s::EndpointSlice values (decode
// is not what is measured here): 100 services per namespace, 20% headless (their endpoints
// get A records under dashed-IP host labels, and PTRs), 80% ClusterIP (endpoints only
// stored); 6 to 14 IPv4 endpoints per service, 10 on average, in one slice (up to 10) or two
// (above 10); one named port. Two sizes: 10k services / 100k endpoints and 100k services /
// 1M endpoints. For each it prints:
//   - the load time of RecordTreeWriter::ReplaceAll + Publish, and of a reload over it;
//   - RSS before and after (VmRSS after malloc_trim(0)), the tree's RSS once the input
//     objects are freed, and bytes of RSS per endpoint;
//   - the cost of one endpoint change (UpsertSlice of a service's 10-endpoint slice with one
//     address replaced, + Publish, the previous snapshot released), averaged over 1000
//     changes to random services, and the same in one 1000-endpoint headless service;
//   - Answerer::Answer throughput on one thread over a query mix.
// Figures and ratios only: nothing here passes or fails on time.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "common/base/ip_address.h"
#include "common/dns/builder.h"
#include "common/dns/name.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "common/k8s/objects.h"
#include "kubedns/answering/answerer.h"
#include "kubedns/records/record_tree.h"

// Counts heap allocations (operator new), so the figures can say how many a query or a
// change costs. The default operator delete frees what this returns.
std::atomic<uint64_t> g_allocations{0};

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace {

using kdns::IpAddress;
using kdns::kubedns::AnswerConfig;
using kdns::kubedns::Answerer;
using kdns::kubedns::RecordTreeWriter;
using kdns::kubedns::Snapshot;
namespace dns = kdns::dns;
namespace k8s = kdns::k8s;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kServicesPerNamespace = 100;
constexpr uint32_t kHeadlessEvery = 5;  // every 5th service is headless: 20%
constexpr uint32_t kSliceMax = 10;      // endpoints in a service's first slice
constexpr size_t kChanges = 1000;
constexpr double kTargetBytesPerEndpoint = 300;  // the target at 1M endpoints

template <typename T>
void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// VmRSS (or another /proc/self/status field) in bytes, after returning free heap pages.
uint64_t StatusBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size())) * 1024;
  }
  return 0;
}
uint64_t RssBytes() {
  malloc_trim(0);
  return StatusBytes("VmRSS");
}
// Bytes glibc malloc has handed out (main arena and mmapped chunks).
uint64_t HeapInUseBytes() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}
double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

IpAddress V4(uint32_t value) {
  const uint8_t bytes[4] = {static_cast<uint8_t>(value >> 24), static_cast<uint8_t>(value >> 16),
                            static_cast<uint8_t>(value >> 8), static_cast<uint8_t>(value)};
  return IpAddress::FromV4(std::span<const uint8_t, 4>(bytes));
}

// The synthetic cluster: every object is a pure function of its index, so the change
// benchmarks can rebuild any service's slices.
class Cluster {
 public:
  // Every `headless_every`-th service is headless (1: all, 0: none).
  Cluster(uint32_t services, uint32_t headless_every)
      : services_(services), headless_every_(headless_every) {
    first_endpoint_.resize(services + 1);
    uint64_t next = 0;
    for (uint32_t i = 0; i < services; ++i) {
      first_endpoint_[i] = next;
      next += EndpointCount(i);
    }
    first_endpoint_[services] = next;
  }

  uint32_t services() const { return services_; }
  uint64_t endpoints() const { return first_endpoint_[services_]; }

  static uint32_t EndpointCount(uint32_t i) { return 6 + (i * 7) % 9; }  // 6..14, mean 10
  bool Headless(uint32_t i) const { return headless_every_ != 0 && i % headless_every_ == 0; }
  static std::string Namespace(uint32_t i) {
    return "ns-" + std::to_string(i / kServicesPerNamespace);
  }
  static std::string Name(uint32_t i) { return "svc-" + std::to_string(i); }
  // 10.96.1.0 upwards (10.96.0.0/12 holds 1M).
  static IpAddress ClusterIp(uint32_t i) { return V4((10u << 24) + (96u << 16) + 256u + i); }
  // Pod IPs from 10.128.0.0/9, one per endpoint.
  IpAddress EndpointIp(uint32_t i, uint32_t k) const {
    return V4((10u << 24) + (128u << 16) + static_cast<uint32_t>(first_endpoint_[i] + k));
  }

  k8s::Service MakeService(uint32_t i) const {
    k8s::Service service;
    service.meta.ns = Namespace(i);
    service.meta.name = Name(i);
    service.meta.uid = "uid-svc-" + std::to_string(i);
    service.meta.resource_version = k8s::ResourceVersion::FromText(std::to_string(1000 + i));
    service.headless = Headless(i);
    if (!service.headless) service.cluster_ips.push_back(ClusterIp(i));
    service.ports.push_back(k8s::ServicePort{"http", k8s::Protocol::kTcp, 80});
    return service;
  }

  // The service's slices: the first 10 endpoints, then the rest.
  std::vector<k8s::EndpointSlice> MakeSlices(uint32_t i) const {
    std::vector<k8s::EndpointSlice> slices;
    const uint32_t count = EndpointCount(i);
    for (uint32_t begin = 0, part = 0; begin < count; begin += kSliceMax, ++part) {
      const uint32_t end = std::min(count, begin + kSliceMax);
      std::vector<IpAddress> ips;
      for (uint32_t k = begin; k < end; ++k) ips.push_back(EndpointIp(i, k));
      slices.push_back(MakeSlice(Namespace(i), Name(i), part, ips));
    }
    return slices;
  }

  static k8s::EndpointSlice MakeSlice(const std::string& ns, const std::string& service,
                                      uint32_t part, const std::vector<IpAddress>& ips) {
    k8s::EndpointSlice slice;
    slice.meta.ns = ns;
    slice.meta.name = service + "-" + (part == 0 ? "x7k2p" : "q9z4m");
    slice.meta.uid = "uid-" + slice.meta.name;
    slice.meta.resource_version = k8s::ResourceVersion::FromText("5000");
    slice.service_name = service;
    slice.address_type = k8s::AddressType::kIPv4;
    slice.endpoints.reserve(ips.size());
    for (size_t k = 0; k < ips.size(); ++k) {
      k8s::Endpoint endpoint;
      endpoint.addresses.push_back(ips[k]);
      endpoint.ready = true;  // (the decoders keep no other endpoint field)
      slice.endpoints.push_back(std::move(endpoint));
    }
    slice.ports.push_back(k8s::EndpointPort{"http", k8s::Protocol::kTcp, 8080});
    return slice;
  }

  RecordTreeWriter::ObjectSet MakeObjects() const {
    RecordTreeWriter::ObjectSet objects;
    objects.services.reserve(services_);
    objects.slices.reserve(services_ * 2);
    for (uint32_t i = 0; i < services_; ++i) {
      objects.services.push_back(MakeService(i));
      for (auto& slice : MakeSlices(i)) objects.slices.push_back(std::move(slice));
    }
    return objects;
  }

 private:
  uint32_t services_;
  uint32_t headless_every_;
  std::vector<uint64_t> first_endpoint_;
};

// A query packet (RD, EDNS with 1232 bytes, as dig and most stubs send).
std::vector<uint8_t> MakeQuery(const std::string& name, dns::RrType type, uint16_t id) {
  return dns::testing::QuerySpec(name).Type(type).Id(id).Edns(1232).Bytes();
}

std::string ReverseName(const IpAddress& ip) {
  auto b = ip.bytes();
  return std::to_string(b[3]) + "." + std::to_string(b[2]) + "." + std::to_string(b[1]) + "." +
         std::to_string(b[0]) + ".in-addr.arpa.";
}

struct QueryKind {
  const char* label;
  std::vector<std::vector<uint8_t>> packets;
};

// Five equal shares: A of ClusterIP services, A of headless services (all their
// endpoints), SRV of the named port, PTR of headless endpoint IPs, NXDOMAIN.
std::vector<QueryKind> MakeQueryMix(const Cluster& cluster, size_t per_kind, std::mt19937& rng) {
  std::vector<QueryKind> kinds = {{"A ClusterIP service", {}},
                                  {"A headless service", {}},
                                  {"SRV _http._tcp", {}},
                                  {"PTR headless endpoint", {}},
                                  {"A NXDOMAIN", {}}};
  std::uniform_int_distribution<uint32_t> pick(0, cluster.services() - 1);
  auto pick_where = [&](bool headless) {
    for (;;) {
      uint32_t i = pick(rng);
      if (cluster.Headless(i) == headless) return i;
    }
  };
  auto fqdn = [](uint32_t i) {
    return Cluster::Name(i) + "." + Cluster::Namespace(i) + ".svc.cluster.local.";
  };
  for (size_t q = 0; q < per_kind; ++q) {
    const auto id = static_cast<uint16_t>(q);
    kinds[0].packets.push_back(MakeQuery(fqdn(pick_where(false)), dns::RrType::kA, id));
    kinds[1].packets.push_back(MakeQuery(fqdn(pick_where(true)), dns::RrType::kA, id));
    kinds[2].packets.push_back(MakeQuery("_http._tcp." + fqdn(pick(rng)), dns::RrType::kSrv, id));
    uint32_t h = pick_where(true);
    IpAddress ip = cluster.EndpointIp(h, pick(rng) % Cluster::EndpointCount(h));
    kinds[3].packets.push_back(MakeQuery(ReverseName(ip), dns::RrType::kPtr, id));
    uint32_t n = pick(rng);
    kinds[4].packets.push_back(MakeQuery(
        "missing-" + std::to_string(n) + "." + Cluster::Namespace(n) + ".svc.cluster.local.",
        dns::RrType::kA, id));
  }
  return kinds;
}

void Line(const std::string& scale, const char* what, const std::string& figure,
          const std::string& note = "") {
  std::printf("[%s] %-52s %s%s%s\n", scale.c_str(), what, figure.c_str(), note.empty() ? "" : "  ",
              note.c_str());
}
std::string Fmt(const char* format, double value) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// One endpoint change in service `i`: its first slice with address `k` replaced by `fresh`.
k8s::EndpointSlice ChangedSlice(const Cluster& cluster, uint32_t i, uint32_t k, IpAddress fresh) {
  std::vector<IpAddress> ips;
  const uint32_t count = std::min(Cluster::EndpointCount(i), kSliceMax);
  for (uint32_t e = 0; e < count; ++e) ips.push_back(cluster.EndpointIp(i, e));
  ips[k % count] = fresh;
  return Cluster::MakeSlice(Cluster::Namespace(i), Cluster::Name(i), 0, ips);
}

// Applies prepared slices one by one, each followed by Publish; the previous snapshot is
// released as a DNS thread's holder would release it. Returns µs per change.
double TimeChanges(RecordTreeWriter& writer, std::shared_ptr<const Snapshot>& current,
                   const std::vector<k8s::EndpointSlice>& slices, double* allocations) {
  const uint64_t allocations_before = g_allocations.load();
  auto start = Clock::now();
  for (const auto& slice : slices) {
    writer.UpsertSlice(slice);
    current = writer.Publish();
  }
  const double us = Seconds(Clock::now() - start) * 1e6 / static_cast<double>(slices.size());
  *allocations = static_cast<double>(g_allocations.load() - allocations_before) /
                 static_cast<double>(slices.size());
  return us;
}

void RunScale(uint32_t services, const std::string& scale, bool check_target) {
  std::mt19937 rng(services);
  const Cluster cluster(services, kHeadlessEvery);
  const uint64_t endpoints = cluster.endpoints();
  std::printf("\n== %s: %u services (%u headless), %llu endpoints, %u namespaces\n", scale.c_str(),
              services, (services + kHeadlessEvery - 1) / kHeadlessEvery,
              static_cast<unsigned long long>(endpoints),
              (services + kServicesPerNamespace - 1) / kServicesPerNamespace);

  const uint64_t rss_start = RssBytes();
  const uint64_t heap_start = HeapInUseBytes();
  auto writer = std::make_unique<RecordTreeWriter>();
  std::shared_ptr<const Snapshot> current;
  uint64_t rss_objects = 0, rss_loaded = 0;
  {
    auto objects = cluster.MakeObjects();
    rss_objects = RssBytes();
    auto start = Clock::now();
    writer->ReplaceAll(objects);
    writer->MarkSynced();
    current = writer->Publish();
    const double load_s = Seconds(Clock::now() - start);
    rss_loaded = RssBytes();
    Line(scale, "load: ReplaceAll + Publish", Fmt("%.1f ms", load_s * 1e3),
         Fmt("(%.0f ns per endpoint)", load_s * 1e9 / static_cast<double>(endpoints)));
  }
  // As at start-up: objects decoded, loaded, then freed.
  const uint64_t rss_tree = RssBytes();
  const uint64_t heap_tree = HeapInUseBytes();
  {
    // A reload of the same set over the loaded tree (file reload, re-LIST); the old tree is
    // freed when the new snapshot replaces it. (Objects are rebuilt, not timed.)
    auto objects = cluster.MakeObjects();
    auto start = Clock::now();
    writer->ReplaceAll(objects);
    current = writer->Publish();
    Line(scale, "reload: ReplaceAll + Publish over a tree",
         Fmt("%.1f ms", Seconds(Clock::now() - start) * 1e3));
  }
  const uint64_t rss_reloaded = RssBytes();
  const uint64_t heap_reloaded = HeapInUseBytes();
  const auto& stats = current->stats();
  Line(scale, "snapshot stats: services/endpoints/PTRs",
       std::to_string(stats.services) + " / " + std::to_string(stats.endpoints) + " / " +
           std::to_string(stats.reverse_entries));
  Line(scale, "RSS before objects (baseline)", Fmt("%.1f MiB", MiB(rss_start)));
  Line(scale, "RSS with input objects", Fmt("%.1f MiB", MiB(rss_objects)));
  Line(scale, "RSS with input objects + tree", Fmt("%.1f MiB", MiB(rss_loaded)));
  Line(scale, "RSS with tree only (objects freed)", Fmt("%.1f MiB", MiB(rss_tree)));
  Line(scale, "RSS with tree only, after a reload", Fmt("%.1f MiB", MiB(rss_reloaded)));
  const double tree_bytes = static_cast<double>(rss_tree) - static_cast<double>(rss_start);
  const double per_endpoint = tree_bytes / static_cast<double>(endpoints);
  Line(scale, "tree RSS per endpoint", Fmt("%.0f bytes", per_endpoint),
       check_target ? Fmt("(target: at most 300 bytes of RSS per endpoint at 1M endpoints; "
                          "figure/target = %.2f)",
                          per_endpoint / kTargetBytesPerEndpoint)
                    : "(the target, at most 300 bytes, is for 1M endpoints)");
  Line(scale, "tree RSS per endpoint, after a reload",
       Fmt("%.0f bytes", (static_cast<double>(rss_reloaded) - static_cast<double>(rss_start)) /
                             static_cast<double>(endpoints)));
  Line(scale, "tree heap in use per endpoint (mallinfo2)",
       Fmt("%.0f bytes", (static_cast<double>(heap_tree) - static_cast<double>(heap_start)) /
                             static_cast<double>(endpoints)),
       "(allocated bytes incl. malloc headers; RSS minus this is free heap)");
  Line(scale, "tree heap in use per endpoint, after a reload",
       Fmt("%.0f bytes", (static_cast<double>(heap_reloaded) - static_cast<double>(heap_start)) /
                             static_cast<double>(endpoints)));
  Line(scale, "tree RSS per service", Fmt("%.0f bytes", tree_bytes / services));

  // Answer throughput, one thread, over pre-built packets in a shuffled order (before the
  // change benchmarks, which replace some of the addresses the queries ask for).
  {
    AnswerConfig config;
    config.zone = *dns::Name::FromText("cluster.local.");
    Answerer answerer(config);
    auto kinds = MakeQueryMix(cluster, 2000, rng);
    std::vector<uint8_t> buffer(65535);
    // As the server does: admit, then answer.
    kdns::server::Admission admission;
    auto answer = [&](std::span<const uint8_t> packet) {
      kdns::server::Admit(packet, kdns::dns::Transport::kUdp, kdns::kubedns::kAdmissionPolicy,
                          &admission);
      return answerer.Answer(current.get(), admission, buffer);
    };
    for (auto& kind : kinds) {
      size_t noerror = 0, nxdomain = 0, other = 0, answered = 0;
      uint64_t bytes = 0;
      const size_t rounds = 100;
      const uint64_t allocations_before = g_allocations.load();
      for (const auto& packet : kind.packets) {
        bytes += answer(packet).response.size();
      }
      const double allocations = static_cast<double>(g_allocations.load() - allocations_before) /
                                 static_cast<double>(kind.packets.size());
      auto start = Clock::now();
      for (size_t r = 0; r < rounds; ++r) {
        for (const auto& packet : kind.packets) {
          auto result = answer(packet);
          bytes += result.response.size();
          if (r == 0) {
            if (result.kind == kdns::kubedns::AnswerKind::kAnswered) ++answered;
            if (result.rcode == dns::Rcode::kNoError)
              ++noerror;
            else if (result.rcode == dns::Rcode::kNxDomain)
              ++nxdomain;
            else
              ++other;
          }
        }
      }
      const double s = Seconds(Clock::now() - start);
      const double n = static_cast<double>(rounds * kind.packets.size());
      DoNotOptimize(bytes);
      std::printf(
          "[%s] answer %-45s %8.0f ns/query  (%.2f M q/s; %.1f heap allocations/query; "
          "%zu NOERROR, %zu NXDOMAIN, %zu other of %zu; %.0f bytes/response)\n",
          scale.c_str(), kind.label, s * 1e9 / n, n / s / 1e6, allocations, noerror, nxdomain,
          other, kind.packets.size(), static_cast<double>(bytes) / n);
    }
    std::vector<const std::vector<uint8_t>*> mix;
    for (const auto& kind : kinds) {
      for (const auto& packet : kind.packets) mix.push_back(&packet);
    }
    std::shuffle(mix.begin(), mix.end(), rng);
    const size_t rounds = 40;
    uint64_t bytes = 0;
    auto start = Clock::now();
    for (size_t r = 0; r < rounds; ++r) {
      for (const auto* packet : mix) {
        bytes += answer(*packet).response.size();
      }
    }
    const double s = Seconds(Clock::now() - start);
    const double n = static_cast<double>(rounds * mix.size());
    DoNotOptimize(bytes);
    Line(scale, "answer, mix of the five (1 thread)", Fmt("%.0f ns/query", s * 1e9 / n),
         Fmt("(%.2f M queries/s)", n / s / 1e6));
  }

  // One endpoint change in random services (the mix: 80% ClusterIP, 20% headless), and in
  // headless services only. Slices are prepared first so that only the tree work is timed.
  // Every service's first slice has min(count, 10) endpoints; services with 10 or more are
  // chosen so the slice has exactly 10.
  std::uniform_int_distribution<uint32_t> pick(0, services - 1);
  uint32_t fresh_ip = (10u << 24) | (200u << 16);  // 10.200.0.0/16: never used above
  auto prepare = [&](bool headless_only) {
    std::vector<k8s::EndpointSlice> slices;
    while (slices.size() < kChanges) {
      uint32_t i = pick(rng);
      if (Cluster::EndpointCount(i) < kSliceMax || (headless_only && !cluster.Headless(i)))
        continue;
      slices.push_back(ChangedSlice(cluster, i, rng(), V4(fresh_ip++)));
    }
    return slices;
  };
  {
    auto mixed = prepare(false);
    auto headless = prepare(true);
    double allocations = 0;
    const double mixed_us = TimeChanges(*writer, current, mixed, &allocations);
    Line(scale, "endpoint change, random service + Publish", Fmt("%.2f us/change", mixed_us),
         Fmt("(10-endpoint slice, 1000 changes, 20%% headless; %.0f allocations/change)",
             allocations));
    const double headless_us = TimeChanges(*writer, current, headless, &allocations);
    Line(scale, "endpoint change, headless service + Publish", Fmt("%.2f us/change", headless_us),
         Fmt("(10-endpoint slice, 1000 changes; %.0f allocations/change)", allocations));
  }

  // A 1000-endpoint headless service in 10 slices of 100; a change replaces one address in
  // one of its slices.
  {
    const std::string ns = "ns-big", name = "big";
    k8s::Service big;
    big.meta.ns = ns;
    big.meta.name = name;
    big.headless = true;
    big.ports.push_back(k8s::ServicePort{"http", k8s::Protocol::kTcp, 80});
    writer->UpsertService(big);
    const uint32_t base = (10u << 24) | (201u << 16);
    std::vector<std::vector<IpAddress>> parts(10);
    for (uint32_t k = 0; k < 1000; ++k) parts[k / 100].push_back(V4(base + k));
    for (uint32_t part = 0; part < 10; ++part) {
      auto slice = Cluster::MakeSlice(ns, name, 0, parts[part]);
      slice.meta.name = name + "-part" + std::to_string(part);
      writer->UpsertSlice(slice);
    }
    current = writer->Publish();
    std::vector<k8s::EndpointSlice> changes;
    for (size_t c = 0; c < kChanges; ++c) {
      uint32_t part = rng() % 10;
      parts[part][rng() % 100] = V4(fresh_ip++);
      auto slice = Cluster::MakeSlice(ns, name, 0, parts[part]);
      slice.meta.name = name + "-part" + std::to_string(part);
      changes.push_back(std::move(slice));
    }
    double allocations = 0;
    const double big_us = TimeChanges(*writer, current, changes, &allocations);
    Line(scale, "endpoint change, 1000-endpoint headless + Publish", Fmt("%.2f us/change", big_us),
         Fmt("(100-endpoint slice of 10, 1000 changes; %.0f allocations/change)", allocations));
    const auto* records = current->FindService(ns, name);
    if (records == nullptr || records->hosts().size() != 1000) {
      std::printf("   note: big service has %zu hosts, expected 1000\n",
                  records ? records->hosts().size() : size_t{0});
    }
  }

  current.reset();
  writer.reset();
  Line(scale, "peak RSS of the process so far (VmHWM)", Fmt("%.1f MiB", MiB(StatusBytes("VmHWM"))));
}

// Where the memory goes: heap in use per endpoint for clusters of one kind only.
void RunBreakdown(uint32_t services) {
  std::printf("\n== heap breakdown by service kind (%u services, 10 endpoints each on average)\n",
              services);
  for (uint32_t every : {0u, 1u}) {
    const Cluster cluster(services, every);
    RssBytes();
    const uint64_t heap_start = HeapInUseBytes();
    RecordTreeWriter writer;
    {
      auto objects = cluster.MakeObjects();
      writer.ReplaceAll(objects);
    }
    auto snapshot = writer.Publish();
    const double per_endpoint =
        (static_cast<double>(HeapInUseBytes()) - static_cast<double>(heap_start)) /
        static_cast<double>(cluster.endpoints());
    Line(every == 0 ? "all ClusterIP" : "all headless", "tree heap in use per endpoint",
         Fmt("%.0f bytes", per_endpoint), Fmt("(%.0f bytes per service)", per_endpoint * 10));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // `kubedns_tree_bench small` runs only the 10k-service cluster.
  const bool small_only = argc > 1 && std::string(argv[1]) == "small";
  std::printf("kubedns record tree and answerer, in process (figures, not pass/fail)\n");
  RunScale(10'000, "10k svc/100k ep", false);
  RunBreakdown(10'000);
  if (!small_only) RunScale(100'000, "100k svc/1M ep", true);
  return 0;
}

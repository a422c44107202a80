// Micro-benchmark of frontend-cache's hit path: CacheKey::FromQuery plus Cache::Lookup (a
// hash probe under the shard lock, a memcpy, the ID/flags/name/TTL rewrites) serving a
// typical A reply into a buffer, single-threaded and from 2 threads sharing the cache, with
// the default shard count and with a single shard (to show what sharding buys). Then the
// insertion path of a full cache, where every insertion evicts one entry (the CLOCK hand),
// from 1 and 2 threads. Prints ns per hit and per insertion; not a test, no thresholds.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "common/base/clock.h"
#include "common/dns/builder.h"
#include "common/dns/message.h"
#include "common/dns/parser.h"
#include "common/dns/query_testing.h"
#include "frontend-cache/cache.h"

namespace {

using namespace kdns;
using namespace kdns::dns;
using kdns::frontend::Cache;
using kdns::frontend::CacheKey;
using kdns::frontend::CacheOptions;
using kdns::frontend::LookupStatus;

constexpr int kNames = 1000;

using kdns::dns::testing::ParsedQuery;

std::string HostName(int i) { return "host-" + std::to_string(i) + ".example.com."; }

ParsedQuery MakeQuery(int i) {
  return kdns::dns::testing::QuerySpec(HostName(i)).Id(static_cast<uint16_t>(i)).Edns().Parsed();
}

std::vector<uint8_t> MakeReply(int i) {
  Message message;
  message.header.qr = message.header.rd = message.header.ra = true;
  const Name name = *Name::FromText(HostName(i));
  message.questions.push_back({name, RrType::kA, RrClass::kIn});
  for (uint8_t last : {1, 2}) {
    const uint8_t ip[4] = {192, 0, 2, last};
    message.answers.push_back({name, RrType::kA, RrClass::kIn, 300, RdataA{IpAddress::FromV4(ip)}});
  }
  message.edns = Edns{};
  std::vector<uint8_t> bytes;
  if (BuildMessage(message, kMaxMessageSize, &bytes) != BuildError::kOk) std::abort();
  return bytes;
}

uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Timing {
  double cpu_ns = 0;   // thread CPU time per hit, averaged over threads
  double wall_ns = 0;  // wall time per hit, averaged over threads
};

// Runs `threads` threads, each doing `body(thread)`, which returns how many operations it
// did. CPU time is what an operation costs; wall time also counts preemption on a busy
// machine.
template <typename Body>
Timing RunThreads(int threads, Body body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads));
  std::vector<Timing> timings(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      auto start = std::chrono::steady_clock::now();
      const uint64_t cpu_start = ThreadCpuNs();
      const double operations = body(t);
      timings[t].cpu_ns = (ThreadCpuNs() - cpu_start) / operations;
      auto elapsed = std::chrono::steady_clock::now() - start;
      timings[t].wall_ns = std::chrono::duration<double, std::nano>(elapsed).count() / operations;
    });
  }
  while (ready.load() != threads) {
  }
  go.store(true);
  for (auto& worker : workers) worker.join();
  Timing sum;
  for (const Timing& timing : timings) {
    sum.cpu_ns += timing.cpu_ns / threads;
    sum.wall_ns += timing.wall_ns / threads;
  }
  return sum;
}

// Every thread serves every query `rounds` times.
Timing RunHits(Cache& cache, const std::vector<ParsedQuery>& queries, int threads, int rounds) {
  std::atomic<uint64_t> misses{0};
  Timing timing = RunThreads(threads, [&](int) {
    std::vector<uint8_t> out(1232);
    uint64_t local_misses = 0;
    for (int round = 0; round < rounds; ++round) {
      for (const ParsedQuery& query : queries) {
        CacheKey key = CacheKey::FromQuery(query.query);
        auto result = cache.Lookup(key, query.query, out, out.size());
        if (result.status != LookupStatus::kHit) ++local_misses;
      }
    }
    misses.fetch_add(local_misses);
    return double(rounds) * queries.size();
  });
  if (misses.load() != 0) std::printf("unexpected misses: %lu\n", (unsigned long)misses.load());
  return timing;
}

// Names first + i, as queries and their upstream replies.
struct Names {
  std::vector<ParsedQuery> queries;
  std::vector<std::vector<uint8_t>> replies;

  Names(int first, int count) {
    queries.reserve(count);
    replies.reserve(count);
    for (int i = first; i < first + count; ++i) {
      queries.push_back(MakeQuery(i));
      replies.push_back(MakeReply(i));
    }
  }
};

void Fill(Cache& cache, const Names& names) {
  for (size_t i = 0; i < names.queries.size(); ++i) {
    if (cache.Insert(CacheKey::FromQuery(names.queries[i].query), names.replies[i]).result !=
        frontend::InsertResult::kInserted) {
      std::abort();
    }
  }
}

// Each thread inserts its share of `names` (every threads-th) `rounds` times into a full
// cache that cannot hold them all: every insertion evicts one entry.
Timing RunEvictions(Cache& cache, const Names& names, int threads, int rounds) {
  return RunThreads(threads, [&](int thread) {
    double inserted = 0;
    for (int round = 0; round < rounds; ++round) {
      for (size_t i = thread; i < names.queries.size(); i += threads) {
        const CacheKey key = CacheKey::FromQuery(names.queries[i].query);
        if (cache.Insert(key, names.replies[i]).result == frontend::InsertResult::kInserted) {
          ++inserted;
        }
      }
    }
    return inserted;
  });
}

}  // namespace

int main() {
  std::vector<ParsedQuery> queries;
  queries.reserve(kNames);
  for (int i = 0; i < kNames; ++i) queries.push_back(MakeQuery(i));
  const SteadyClock& clock = SteadyClock::Instance();
  for (size_t shards : {size_t{0}, size_t{1}}) {
    CacheOptions options;
    options.capacity = 10'000;
    options.shard_count = shards;
    Cache cache(options, clock);
    for (int i = 0; i < kNames; ++i) {
      if (cache.Insert(CacheKey::FromQuery(queries[i].query), MakeReply(i)).result !=
          frontend::InsertResult::kInserted) {
        std::abort();
      }
    }
    RunHits(cache, queries, 1, 200);  // warm up
    for (int threads : {1, 2}) {
      const int rounds = 2000;
      Timing timing = RunHits(cache, queries, threads, rounds);
      std::printf("cache hit, %2zu shard%s %d thread%s %7.1f ns CPU/hit  %7.1f ns wall/hit\n",
                  cache.shard_count(), cache.shard_count() == 1 ? ", " : "s,", threads,
                  threads == 1 ? ": " : "s:", timing.cpu_ns, timing.wall_ns);
    }
  }
  // A full cache of kNames entries and 10 times as many names cycled through it: each
  // insertion (the reply's analysis and copy included) evicts one entry.
  const Names churn(kNames, 10 * kNames);
  for (int threads : {1, 2}) {
    CacheOptions options;
    options.capacity = kNames;
    Cache cache(options, clock);
    Fill(cache, Names(0, kNames));
    const Timing timing = RunEvictions(cache, churn, threads, 5);
    std::printf(
        "insertion evicting one, %2zu shards, %d thread%s %7.1f ns CPU/insertion  %7.1f ns "
        "wall/insertion\n",
        cache.shard_count(), threads, threads == 1 ? ": " : "s:", timing.cpu_ns, timing.wall_ns);
  }
  return 0;
}

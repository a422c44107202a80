// Counters of a DNS server, kept per thread and summed when metrics are scraped (the shape
// of PowerDNS's tcounters): each serving thread is the only writer of its ThreadStats, so
// an increment is a relaxed load and store (no locked instruction on the query path), and
// a scrape on another thread reads every counter with a relaxed load. A scrape is not a
// consistent cut across counters, which Prometheus does not need.
//
// ServerStats is the plain snapshot: the sum over threads, or one thread's values.
//
// Thread: ThreadStats is written by one loop thread (udp_fast_answers by the UDP socket's
// receiver thread) and read from any thread. The receiver's counter has a cache line of its
// own, and so has the whole, so the receiver's count per query and the loop's per handed-off
// query (or a neighbouring thread's) never write one line from two cores.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/base/single_writer.h"
#include "common/metrics/shard.h"

namespace kdns::server {

struct ServerStats {
  uint64_t udp_queries = 0;       // datagrams handed to the handler
  uint64_t tcp_queries = 0;       // TCP messages handed to the handler
  uint64_t udp_replies = 0;       // replies the UDP socket accepted
  uint64_t tcp_replies = 0;       // replies written to a TCP connection
  uint64_t unanswered = 0;        // queries the handler dropped (never replied to)
  uint64_t dropped_replies = 0;   // replies that could not be sent (see Responder::Reply)
  uint64_t udp_truncated = 0;     // datagrams over the receive size, dropped by the socket
  uint64_t udp_errors = 0;        // failed receive/send system calls
  uint64_t tcp_accepted = 0;      // connections accepted and served
  uint64_t tcp_rejected = 0;      // connections refused at a cap: no idle one to close
  uint64_t tcp_evicted = 0;       // idle connections closed to make room at a cap
  uint64_t tcp_open = 0;          // gauge: connections open now
  uint64_t udp_fast_answers = 0;  // of udp_queries, answered on the UDP receiver thread

  ServerStats& operator+=(const ServerStats& other);
};

class alignas(metrics::kCacheLineBytes) ThreadStats {
 public:
  // Single writer: a relaxed load and store, not a read-modify-write.
  static void Increment(std::atomic<uint64_t>& counter, uint64_t by = 1) {
    AddSingleWriter(counter, by);
  }
  static void Set(std::atomic<uint64_t>& counter, uint64_t value) {
    counter.store(value, std::memory_order_relaxed);
  }

  // From any thread.
  ServerStats Read() const;

  std::atomic<uint64_t> udp_queries{0};
  std::atomic<uint64_t> tcp_queries{0};
  std::atomic<uint64_t> udp_replies{0};
  std::atomic<uint64_t> tcp_replies{0};
  std::atomic<uint64_t> unanswered{0};
  std::atomic<uint64_t> dropped_replies{0};
  // Mirrored from the UDP socket's own (loop-thread) counters; see LoopServer.
  std::atomic<uint64_t> udp_truncated{0};
  std::atomic<uint64_t> udp_errors{0};
  std::atomic<uint64_t> tcp_accepted{0};
  std::atomic<uint64_t> tcp_rejected{0};
  std::atomic<uint64_t> tcp_evicted{0};
  std::atomic<uint64_t> tcp_open{0};
  // Queries the UDP receiver thread answered (its only writer); counted in udp_queries and
  // udp_replies by Read().
  alignas(metrics::kCacheLineBytes) std::atomic<uint64_t> udp_fast_answers{0};
};

}  // namespace kdns::server

#include "common/server/stats.h"

namespace kdns::server {

ServerStats& ServerStats::operator+=(const ServerStats& other) {
  udp_queries += other.udp_queries;
  tcp_queries += other.tcp_queries;
  udp_replies += other.udp_replies;
  tcp_replies += other.tcp_replies;
  unanswered += other.unanswered;
  dropped_replies += other.dropped_replies;
  udp_truncated += other.udp_truncated;
  udp_errors += other.udp_errors;
  tcp_accepted += other.tcp_accepted;
  tcp_rejected += other.tcp_rejected;
  tcp_open += other.tcp_open;
  udp_fast_answers += other.udp_fast_answers;
  return *this;
}

ServerStats ThreadStats::Read() const {
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  ServerStats s;
  s.udp_queries = get(udp_queries);
  s.tcp_queries = get(tcp_queries);
  s.udp_replies = get(udp_replies);
  s.tcp_replies = get(tcp_replies);
  s.unanswered = get(unanswered);
  s.dropped_replies = get(dropped_replies);
  s.udp_truncated = get(udp_truncated);
  s.udp_errors = get(udp_errors);
  s.tcp_accepted = get(tcp_accepted);
  s.tcp_rejected = get(tcp_rejected);
  s.tcp_open = get(tcp_open);
  s.udp_fast_answers = get(udp_fast_answers);
  s.udp_queries += s.udp_fast_answers;
  s.udp_replies += s.udp_fast_answers;
  return s;
}

}  // namespace kdns::server

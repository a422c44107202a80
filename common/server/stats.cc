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
  tcp_evicted += other.tcp_evicted;
  tcp_open += other.tcp_open;
  udp_fast_answers += other.udp_fast_answers;
  return *this;
}

ServerStats ThreadStats::Read() const {
  ServerStats s;
  s.udp_queries = LoadRelaxed(udp_queries);
  s.tcp_queries = LoadRelaxed(tcp_queries);
  s.udp_replies = LoadRelaxed(udp_replies);
  s.tcp_replies = LoadRelaxed(tcp_replies);
  s.unanswered = LoadRelaxed(unanswered);
  s.dropped_replies = LoadRelaxed(dropped_replies);
  s.udp_truncated = LoadRelaxed(udp_truncated);
  s.udp_errors = LoadRelaxed(udp_errors);
  s.tcp_accepted = LoadRelaxed(tcp_accepted);
  s.tcp_rejected = LoadRelaxed(tcp_rejected);
  s.tcp_evicted = LoadRelaxed(tcp_evicted);
  s.tcp_open = LoadRelaxed(tcp_open);
  s.udp_fast_answers = LoadRelaxed(udp_fast_answers);
  s.udp_queries += s.udp_fast_answers;
  s.udp_replies += s.udp_fast_answers;
  return s;
}

}  // namespace kdns::server

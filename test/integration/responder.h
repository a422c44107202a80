// A small authoritative responder built only from common/loop and common/dns, for tests
// that query it with real clients (dig, kdig) and so check our wire format against
// independent parsers.
//
// It serves a fixed table (owner name → records per section) over UDP and TCP on
// 127.0.0.1 with an ephemeral port: a script of the shared fake DNS server
// (test/support/fake_dns_server.h), on its own thread and loop. Answers: the table's
// records for the query name (every record of the name for ANY, those of the query type
// otherwise), NXDOMAIN with the zone's SOA for names it does not hold, FORMERR for a
// malformed query that has a header, nothing for shorter garbage. Over UDP a response is
// limited to 512 bytes, or the client's EDNS payload size, and is truncated at a whole RRset
// with TC; over TCP it is complete.
//
// Every response it sends is kept (LastResponse) so a test can parse our own bytes and
// compare with what the client printed.
//
// Thread: constructed and destroyed on the test thread; serving happens on its own thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/dns/message.h"
#include "common/dns/name.h"
#include "test/support/fake_dns_server.h"

namespace kdns::testing {

struct ResponderEntry {
  std::vector<dns::ResourceRecord> answers;
  std::vector<dns::ResourceRecord> authorities;
  std::vector<dns::ResourceRecord> additionals;
};

class Responder {
 public:
  // `soa` is the record put in the authority section of NXDOMAIN answers.
  Responder(const std::map<std::string, ResponderEntry>& table, dns::ResourceRecord soa);
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  // One port for both transports.
  uint16_t udp_port() const { return server_.address().port(); }
  uint16_t tcp_port() const { return server_.address().port(); }

  // The bytes of the latest response sent (over either transport).
  std::vector<uint8_t> LastResponse() const;
  uint64_t formerr_count() const;

 private:
  // Builds the answer to one query (on the server's thread); empty means no answer
  // (garbage without a header).
  std::vector<uint8_t> Answer(std::span<const uint8_t> query, size_t udp_limit_or_zero);

  std::map<std::string, ResponderEntry> table_;  // keyed by lower-cased owner text
  dns::ResourceRecord soa_;

  mutable std::mutex mutex_;
  std::vector<uint8_t> last_response_;  // guarded by mutex_
  uint64_t formerr_count_ = 0;          // guarded by mutex_
  FakeDnsServerThread server_;          // last: stopped before the state its script uses
};

}  // namespace kdns::testing

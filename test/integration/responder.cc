#include "test/integration/responder.h"

#include <glog/logging.h>

#include <utility>

#include "common/dns/builder.h"
#include "common/dns/parser.h"

namespace kdns::testing {

namespace {

std::string Key(const dns::Name& name) { return name.Lowercased().ToText(); }

}  // namespace

Responder::Responder(const std::map<std::string, ResponderEntry>& table, dns::ResourceRecord soa)
    : table_([&table] {
        std::map<std::string, ResponderEntry> keyed;
        for (const auto& [owner, entry] : table) {
          auto name = dns::Name::FromText(owner);
          CHECK(name) << owner;
          keyed[Key(*name)] = entry;
        }
        return keyed;
      }()),
      soa_(std::move(soa)),
      server_([this](const ReceivedQuery& query) -> Replies {
        std::vector<uint8_t> reply = Answer(
            query.bytes, query.transport == Transport::kUdp ? dns::kMaxUdpSizeWithoutEdns : 0);
        if (reply.empty()) return {};
        return {std::move(reply)};
      }) {}

Responder::~Responder() = default;

std::vector<uint8_t> Responder::LastResponse() const {
  std::lock_guard lock(mutex_);
  return last_response_;
}

uint64_t Responder::formerr_count() const {
  std::lock_guard lock(mutex_);
  return formerr_count_;
}

std::vector<uint8_t> Responder::Answer(std::span<const uint8_t> packet, size_t udp_limit) {
  dns::Query query;
  dns::ParseError error = dns::ParseQuery(packet, &query);
  std::vector<uint8_t> out(dns::kMaxMessageSize);
  if (error != dns::ParseError::kOk) {
    if (packet.size() < dns::kHeaderSize) return {};
    dns::MessageBuilder builder(out, dns::kMaxUdpSizeWithoutEdns);
    builder.header().id = query.header.id;
    builder.header().qr = true;
    builder.header().opcode = query.header.opcode;
    builder.header().rcode = dns::Rcode::kFormErr;
    out.resize(builder.Finish().size());
    std::lock_guard lock(mutex_);
    ++formerr_count_;
    return out;
  }

  size_t limit = dns::kMaxMessageSize;
  if (udp_limit != 0) limit = query.edns ? query.edns->PayloadSize() : udp_limit;
  dns::MessageBuilder builder(out, limit);
  if (builder.StartResponse(query) != dns::BuildError::kOk) return {};
  if (query.edns) (void)builder.SetEdns(dns::EdnsView{});
  builder.header().aa = true;

  auto found = table_.find(Key(query.qname));
  if (found == table_.end()) {
    builder.header().rcode = dns::Rcode::kNxDomain;
    (void)builder.AddRecord(dns::Section::kAuthority, soa_);
  } else {
    // One RRset per (type) in table order; each set is added whole or truncated whole.
    auto add_section = [&](dns::Section section, const std::vector<dns::ResourceRecord>& rrs,
                           bool filter) {
      size_t i = 0;
      while (i < rrs.size()) {
        size_t j = i;
        while (j < rrs.size() && rrs[j].type == rrs[i].type) ++j;
        bool wanted = !filter || query.qtype == dns::RrType::kAny || rrs[i].type == query.qtype;
        if (wanted) {
          builder.BeginRrset(section);
          for (size_t k = i; k < j; ++k) builder.Add(rrs[k]);
          (void)builder.EndRrset();
        }
        i = j;
      }
    };
    add_section(dns::Section::kAnswer, found->second.answers, true);
    add_section(dns::Section::kAuthority, found->second.authorities, false);
    add_section(dns::Section::kAdditional, found->second.additionals, false);
  }
  out.resize(builder.Finish().size());
  std::lock_guard lock(mutex_);
  last_response_ = out;
  return out;
}

}  // namespace kdns::testing

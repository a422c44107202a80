#include "common/dns/edns.h"

namespace kdns::dns {

Edns Edns::FromView(const EdnsView& view) {
  Edns edns;
  edns.udp_payload_size = view.udp_payload_size;
  edns.extended_rcode = view.extended_rcode;
  edns.version = view.version;
  edns.dnssec_ok = view.dnssec_ok;
  edns.z = view.z;
  edns.options.assign(view.options.begin(), view.options.end());
  return edns;
}

EdnsView Edns::View() const {
  EdnsView view;
  view.udp_payload_size = udp_payload_size;
  view.extended_rcode = extended_rcode;
  view.version = version;
  view.dnssec_ok = dnssec_ok;
  view.z = z;
  view.options = options;
  return view;
}

ParseError ParseOpt(uint16_t cls, uint32_t ttl, std::span<const uint8_t> rdata, EdnsView* edns) {
  for (size_t at = 0; at < rdata.size();) {
    if (rdata.size() - at < 4) return ParseError::kBadRdata;
    size_t length = static_cast<size_t>(rdata[at + 2]) << 8 | rdata[at + 3];
    if (rdata.size() - at - 4 < length) return ParseError::kBadRdata;
    at += 4 + length;
  }
  edns->udp_payload_size = cls;
  edns->extended_rcode = static_cast<uint8_t>(ttl >> 24);
  edns->version = static_cast<uint8_t>(ttl >> 16);
  edns->dnssec_ok = (ttl & 0x8000) != 0;
  edns->z = static_cast<uint16_t>(ttl & 0x7FFF);
  edns->options = rdata;
  return ParseError::kOk;
}

}  // namespace kdns::dns

// 0x20: random letter case in the names we forward (draft-vixie-dnsext-dns0x20), so a
// spoofed reply must guess one more bit per letter of the question name besides the
// source port and the 16-bit ID (udp_socket_pool.h, wire.h; the budget is worked out in
// docs/design.md, §7 "Spoofing"). Servers copy the question into the reply byte for byte;
// a reply whose question differs from what we sent in case only is not ours (wire.h:
// Match::kWrongCase).
//
// The pieces, all pure (no I/O):
//   - Dns0x20: the mode (--upstream-0x20=auto|on|off), parsed here once for both programs.
//   - Randomize0x20: the name as sent, each ASCII letter's case drawn from the CSPRNG.
//   - Restore0x20: the reply as the client asked, the random spelling replaced by the
//     client's, in the question and in every owner name that is the question name or one of
//     its ancestors (compression pointers to the question follow it by themselves), so the
//     random case reaches neither a client nor the cache (its keys are lower-cased anyway).
//   - Echo0x20: what one Forwarder has learnt about one upstream: does it echo our case?
//
// Echo0x20, under kAuto. An upstream starts "unknown". A reply that echoes a spelling with
// an upper-case letter in it (all lower case proves nothing: a server that lower-cases
// would echo it too) marks it "echoes". A reply with the wrong case:
//   - from an upstream that echoes: a spoof attempt. Dropped; the query keeps waiting for
//     the real reply (which resets the count below).
//   - from an unknown upstream: probably one that does not echo. Dropped, and the same try
//     is sent again at once with the client's spelling (one round trip more, as for the
//     EDNS fallback), so answers keep flowing while we learn.
//   - the `fallback_after`-th in a row (no echoed reply in between): the upstream is marked
//     "does not echo" and gets the client's spelling (no 0x20) for `reprobe_after_ms`; then
//     it is unknown again. Counted (kdns_limit_hits_total{limit="upstream_0x20_fallback"})
//     and logged by the Forwarder.
// A real upstream that echoes answers each query with the right case, resetting the count;
// an attacker who wants to turn 0x20 off must land `fallback_after` replies with our port
// and ID and no real reply in between, and it lasts `reprobe_after_ms`. The one window with
// a cheaper downgrade is an unknown upstream (before its first echoed reply): a spoof with
// the wrong case then gets the plain retry. kOn never falls back (a wrong case is always
// dropped); kOff never randomises.
//
// Thread: Echo0x20 lives in its Forwarder's Server, on the loop's thread; the functions have
// no state.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/dns/message.h"
#include "common/dns/name.h"
#include "common/upstream/random.h"

namespace kdns::upstream {

enum class Dns0x20 : uint8_t {
  kOff,   // names go upstream as the client spelt them
  kAuto,  // random case; an upstream that does not echo it gets the client's spelling
  kOn,    // random case always; a reply with another case is never accepted
};
std::string_view Dns0x20Name(Dns0x20 mode);
// "auto", "on" or "off"; false for anything else.
[[nodiscard]] bool ParseDns0x20(std::string_view text, Dns0x20* mode);

// `name` with each ASCII letter in upper or lower case at random (RFC 4343: the same name).
dns::Name Randomize0x20(const dns::Name& name, SecureRandom& random);

// In `reply` (a whole message that matched the query sent as `sent`), writes `asked`'s
// spelling over every owner name spelt as `sent` or as one of its ancestors, the question's
// included. Stops quietly at anything malformed (MatchReply has parsed the reply already).
void Restore0x20(std::span<uint8_t> reply, const dns::Name& sent, const dns::Name& asked);
// The same on a parsed reply (ReplyDecode::kWhole decodes the records).
void Restore0x20(dns::Message* reply, const dns::Name& sent, const dns::Name& asked);

class Echo0x20 {
 public:
  struct Options {
    Dns0x20 mode = Dns0x20::kAuto;
    uint32_t fallback_after = 3;          // wrong-case replies in a row
    uint64_t reprobe_after_ms = 600'000;  // how long a fallback lasts
  };
  // What to do with a reply that has our ID and question but not our case.
  enum class Verdict : uint8_t {
    kDrop,        // a spoof attempt: keep waiting for the real reply
    kRetryPlain,  // ask again at once with the client's spelling
    kFallBack,    // kRetryPlain, and from now on the client's spelling (count and log it)
  };

  explicit Echo0x20(const Options& options) : options_(options) {}

  // Whether the next UDP query to this upstream gets random case; ends a fallback whose
  // time is up.
  bool Use(uint64_t now_ms);
  // A matching reply with our case. `sent` is what we sent (a spelling in lower case only
  // proves nothing).
  void OnEchoed(const dns::Name& sent);
  Verdict OnWrongCase(uint64_t now_ms);

  bool echoes() const { return state_ == State::kEchoes; }
  bool fallen_back() const { return state_ == State::kPlain; }

 private:
  enum class State : uint8_t { kUnknown, kEchoes, kPlain };
  Options options_;
  State state_ = State::kUnknown;
  uint32_t wrong_in_a_row_ = 0;
  uint64_t plain_until_ms_ = 0;
};

}  // namespace kdns::upstream

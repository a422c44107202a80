// DNS protocol constants as enum classes, with their mnemonics. Text forms follow the
// presentation format: known mnemonics ("A", "IN", "NXDOMAIN") and the RFC 3597 generic
// forms ("TYPE123", "CLASS3") for everything else. Pure functions, no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kdns::dns {

// Values any 16-bit number can take: unknown types are still valid RrType values.
enum class RrType : uint16_t {
  kA = 1,
  kNs = 2,
  kCname = 5,
  kSoa = 6,
  kPtr = 12,
  kHinfo = 13,
  kMx = 15,
  kTxt = 16,
  kAaaa = 28,
  kSrv = 33,
  kNaptr = 35,
  kDname = 39,
  kOpt = 41,
  kDs = 43,
  kRrsig = 46,
  kNsec = 47,
  kDnskey = 48,
  kSvcb = 64,
  kHttps = 65,
  kIxfr = 251,
  kAxfr = 252,
  kAny = 255,
  kCaa = 257,
};

enum class RrClass : uint16_t {
  kIn = 1,
  kCh = 3,
  kHs = 4,
  kNone = 254,
  kAny = 255,
};

// Response codes, including the EDNS extended ones (12 bits: RFC 6891 §6.1.3).
enum class Rcode : uint16_t {
  kNoError = 0,
  kFormErr = 1,
  kServFail = 2,
  kNxDomain = 3,
  kNotImp = 4,
  kRefused = 5,
  kYxDomain = 6,
  kYxRrset = 7,
  kNxRrset = 8,
  kNotAuth = 9,
  kNotZone = 10,
  kBadVers = 16,
};

enum class Opcode : uint8_t {
  kQuery = 0,
  kIQuery = 1,
  kStatus = 2,
  kNotify = 4,
  kUpdate = 5,
};

enum class Section : uint8_t { kQuestion = 0, kAnswer = 1, kAuthority = 2, kAdditional = 3 };

std::string RrTypeToText(RrType type);
std::string RrClassToText(RrClass cls);
std::string RcodeToText(Rcode rcode);
std::string OpcodeToText(Opcode opcode);
std::string_view SectionToText(Section section);

// Case-insensitive; accept the mnemonics and the generic forms.
std::optional<RrType> RrTypeFromText(std::string_view text);
std::optional<RrClass> RrClassFromText(std::string_view text);

}  // namespace kdns::dns

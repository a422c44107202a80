#include "common/dns/types.h"

#include <charconv>

namespace kdns::dns {
namespace {

struct TypeName {
  RrType type;
  std::string_view text;
};
constexpr TypeName kTypeNames[] = {
    {RrType::kA, "A"},         {RrType::kNs, "NS"},         {RrType::kCname, "CNAME"},
    {RrType::kSoa, "SOA"},     {RrType::kPtr, "PTR"},       {RrType::kHinfo, "HINFO"},
    {RrType::kMx, "MX"},       {RrType::kTxt, "TXT"},       {RrType::kAaaa, "AAAA"},
    {RrType::kSrv, "SRV"},     {RrType::kNaptr, "NAPTR"},   {RrType::kDname, "DNAME"},
    {RrType::kOpt, "OPT"},     {RrType::kDs, "DS"},         {RrType::kRrsig, "RRSIG"},
    {RrType::kNsec, "NSEC"},   {RrType::kDnskey, "DNSKEY"}, {RrType::kSvcb, "SVCB"},
    {RrType::kHttps, "HTTPS"}, {RrType::kIxfr, "IXFR"},     {RrType::kAxfr, "AXFR"},
    {RrType::kAny, "ANY"},     {RrType::kCaa, "CAA"},
};

struct ClassName {
  RrClass cls;
  std::string_view text;
};
constexpr ClassName kClassNames[] = {
    {RrClass::kIn, "IN"},     {RrClass::kCh, "CH"},   {RrClass::kHs, "HS"},
    {RrClass::kNone, "NONE"}, {RrClass::kAny, "ANY"},
};

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'a' && a[i] <= 'z' ? static_cast<char>(a[i] - 32) : a[i];
    char y = b[i] >= 'a' && b[i] <= 'z' ? static_cast<char>(b[i] - 32) : b[i];
    if (x != y) return false;
  }
  return true;
}

// Parses the RFC 3597 generic form: `prefix` followed by a decimal 0..65535.
std::optional<uint16_t> ParseGeneric(std::string_view text, std::string_view prefix) {
  if (text.size() <= prefix.size() || !EqualsIgnoringCase(text.substr(0, prefix.size()), prefix)) {
    return std::nullopt;
  }
  std::string_view digits = text.substr(prefix.size());
  uint32_t value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size() || value > 0xFFFF) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

}  // namespace

std::string RrTypeToText(RrType type) {
  for (const TypeName& entry : kTypeNames) {
    if (entry.type == type) return std::string(entry.text);
  }
  return "TYPE" + std::to_string(static_cast<unsigned>(type));
}

std::string RrClassToText(RrClass cls) {
  for (const ClassName& entry : kClassNames) {
    if (entry.cls == cls) return std::string(entry.text);
  }
  return "CLASS" + std::to_string(static_cast<unsigned>(cls));
}

std::optional<RrType> RrTypeFromText(std::string_view text) {
  for (const TypeName& entry : kTypeNames) {
    if (EqualsIgnoringCase(entry.text, text)) return entry.type;
  }
  if (auto value = ParseGeneric(text, "TYPE")) return static_cast<RrType>(*value);
  return std::nullopt;
}

std::optional<RrClass> RrClassFromText(std::string_view text) {
  for (const ClassName& entry : kClassNames) {
    if (EqualsIgnoringCase(entry.text, text)) return entry.cls;
  }
  if (auto value = ParseGeneric(text, "CLASS")) return static_cast<RrClass>(*value);
  return std::nullopt;
}

std::string RcodeToText(Rcode rcode) {
  switch (rcode) {
    case Rcode::kNoError:
      return "NOERROR";
    case Rcode::kFormErr:
      return "FORMERR";
    case Rcode::kServFail:
      return "SERVFAIL";
    case Rcode::kNxDomain:
      return "NXDOMAIN";
    case Rcode::kNotImp:
      return "NOTIMP";
    case Rcode::kRefused:
      return "REFUSED";
    case Rcode::kYxDomain:
      return "YXDOMAIN";
    case Rcode::kYxRrset:
      return "YXRRSET";
    case Rcode::kNxRrset:
      return "NXRRSET";
    case Rcode::kNotAuth:
      return "NOTAUTH";
    case Rcode::kNotZone:
      return "NOTZONE";
    case Rcode::kBadVers:
      return "BADVERS";
  }
  return "RCODE" + std::to_string(static_cast<unsigned>(rcode));
}

std::string OpcodeToText(Opcode opcode) {
  switch (opcode) {
    case Opcode::kQuery:
      return "QUERY";
    case Opcode::kIQuery:
      return "IQUERY";
    case Opcode::kStatus:
      return "STATUS";
    case Opcode::kNotify:
      return "NOTIFY";
    case Opcode::kUpdate:
      return "UPDATE";
  }
  return "OPCODE" + std::to_string(static_cast<unsigned>(opcode));
}

std::string_view SectionToText(Section section) {
  switch (section) {
    case Section::kQuestion:
      return "QUESTION";
    case Section::kAnswer:
      return "ANSWER";
    case Section::kAuthority:
      return "AUTHORITY";
    case Section::kAdditional:
      return "ADDITIONAL";
  }
  return "SECTION?";
}

}  // namespace kdns::dns

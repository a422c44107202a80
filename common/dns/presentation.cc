#include "common/dns/presentation.h"

#include <charconv>
#include <cstdio>
#include <type_traits>
#include <vector>

namespace kdns::dns {
namespace {

// Upper case, as dig and kdig print RFC 3597 generic rdata.
constexpr char kHexDigits[] = "0123456789ABCDEF";

std::string HexOf(std::span<const uint8_t> bytes) {
  std::string text;
  text.reserve(bytes.size() * 2);
  for (uint8_t byte : bytes) {
    text += kHexDigits[byte >> 4];
    text += kHexDigits[byte & 0x0F];
  }
  return text;
}

struct Token {
  std::string_view text;  // quotes stripped, escapes still in place
  bool quoted = false;
};

// Splits on blanks; a token starting with '"' runs to the next unescaped '"'.
[[nodiscard]] bool Tokenize(std::string_view text, std::vector<Token>* tokens) {
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n') {
      ++i;
      continue;
    }
    bool quoted = text[i] == '"';
    size_t start = quoted ? i + 1 : i;
    size_t j = start;
    while (j < text.size()) {
      char c = text[j];
      if (c == '\\') {
        j += 2;
        continue;
      }
      if (quoted ? c == '"' : (c == ' ' || c == '\t' || c == '\r' || c == '\n')) break;
      ++j;
    }
    if (j > text.size() || (quoted && j >= text.size())) return false;  // unterminated
    tokens->push_back({text.substr(start, j - start), quoted});
    i = quoted ? j + 1 : j;
  }
  return true;
}

// Resolves `\X` and `\DDD` in a character-string.
[[nodiscard]] bool DecodeCharacterString(std::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      *out += text[i];
      continue;
    }
    if (++i >= text.size()) return false;
    if (text[i] >= '0' && text[i] <= '9') {
      if (i + 3 > text.size()) return false;
      unsigned value = 0;
      for (size_t j = i; j < i + 3; ++j) {
        if (text[j] < '0' || text[j] > '9') return false;
        value = value * 10 + static_cast<unsigned>(text[j] - '0');
      }
      if (value > 255) return false;
      *out += static_cast<char>(value);
      i += 2;
    } else {
      *out += text[i];
    }
  }
  return out->size() <= 255;
}

template <typename T>
[[nodiscard]] bool ParseNumber(std::string_view text, T* value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

[[nodiscard]] bool ParseHex(std::string_view text, std::vector<uint8_t>* bytes) {
  if (text.size() % 2 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 2) {
    uint8_t byte = 0;
    auto [end, error] = std::from_chars(text.data() + i, text.data() + i + 2, byte, 16);
    if (error != std::errc() || end != text.data() + i + 2) return false;
    bytes->push_back(byte);
  }
  return true;
}

// Parses `tokens` as the rdata of (type, cls).
[[nodiscard]] ParseError ParseRdataText(std::span<const Token> tokens, RrType type, RrClass cls,
                                        Rdata* rdata) {
  constexpr ParseError kBad = ParseError::kBadText;
  if (!tokens.empty() && !tokens[0].quoted && tokens[0].text == "\\#") {
    size_t length = 0;
    if (tokens.size() < 2 || !ParseNumber(tokens[1].text, &length)) return kBad;
    std::vector<uint8_t> bytes;
    for (const Token& token : tokens.subspan(2)) {
      if (!ParseHex(token.text, &bytes)) return kBad;
    }
    if (bytes.size() != length || length > 0xFFFF) return kBad;
    return ParseRdata(bytes, 0, bytes.size(), type, cls, rdata);
  }
  if (!IsTypedRdata(type, cls)) return kBad;
  auto name_at = [&tokens](size_t i, Name* name) {
    return i < tokens.size() && Name::FromText(tokens[i].text, name) == ParseError::kOk;
  };
  auto expect = [&tokens](size_t count) { return tokens.size() == count; };
  switch (type) {
    case RrType::kA:
    case RrType::kAaaa: {
      if (!expect(1)) return kBad;
      auto address = IpAddress::Parse(tokens[0].text);
      if (!address || address->is_v4() != (type == RrType::kA)) return kBad;
      if (type == RrType::kA) {
        *rdata = RdataA{*address};
      } else {
        *rdata = RdataAaaa{*address};
      }
      return ParseError::kOk;
    }
    case RrType::kNs: {
      RdataNs ns;
      if (!expect(1) || !name_at(0, &ns.host)) return kBad;
      *rdata = ns;
      return ParseError::kOk;
    }
    case RrType::kCname:
    case RrType::kPtr:
    case RrType::kDname: {
      Name target;
      if (!expect(1) || !name_at(0, &target)) return kBad;
      if (type == RrType::kCname) *rdata = RdataCname{target};
      if (type == RrType::kPtr) *rdata = RdataPtr{target};
      if (type == RrType::kDname) *rdata = RdataDname{target};
      return ParseError::kOk;
    }
    case RrType::kSoa: {
      RdataSoa soa;
      if (!expect(7) || !name_at(0, &soa.mname) || !name_at(1, &soa.rname) ||
          !ParseNumber(tokens[2].text, &soa.serial) ||
          !ParseNumber(tokens[3].text, &soa.refresh_s) ||
          !ParseNumber(tokens[4].text, &soa.retry_s) ||
          !ParseNumber(tokens[5].text, &soa.expire_s) ||
          !ParseNumber(tokens[6].text, &soa.minimum_s)) {
        return kBad;
      }
      *rdata = soa;
      return ParseError::kOk;
    }
    case RrType::kMx: {
      RdataMx mx;
      if (!expect(2) || !ParseNumber(tokens[0].text, &mx.preference) || !name_at(1, &mx.exchange)) {
        return kBad;
      }
      *rdata = mx;
      return ParseError::kOk;
    }
    case RrType::kSrv: {
      RdataSrv srv;
      if (!expect(4) || !ParseNumber(tokens[0].text, &srv.priority) ||
          !ParseNumber(tokens[1].text, &srv.weight) || !ParseNumber(tokens[2].text, &srv.port) ||
          !name_at(3, &srv.target)) {
        return kBad;
      }
      *rdata = srv;
      return ParseError::kOk;
    }
    case RrType::kTxt:
    case RrType::kHinfo: {
      std::vector<std::string> strings;
      for (const Token& token : tokens) {
        std::string text;
        if (!DecodeCharacterString(token.text, &text)) return kBad;
        strings.push_back(std::move(text));
      }
      if (type == RrType::kTxt) {
        if (strings.empty()) return kBad;
        *rdata = RdataTxt{std::move(strings)};
      } else {
        if (strings.size() != 2) return kBad;
        *rdata = RdataHinfo{std::move(strings[0]), std::move(strings[1])};
      }
      return ParseError::kOk;
    }
    default:
      return kBad;
  }
}

bool IsAllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::string CharacterStringToText(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto octet = static_cast<uint8_t>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (octet < 0x20 || octet >= 0x7F) {
      char escape[5];
      std::snprintf(escape, sizeof(escape), "\\%03u", octet);
      out += escape;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string RdataToText(const Rdata& rdata) {
  return std::visit(
      [](const auto& value) -> std::string {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, RdataOpaque>) {
          std::string text = "\\# " + std::to_string(value.bytes.size());
          if (!value.bytes.empty()) text += " " + HexOf(value.bytes);
          return text;
        } else if constexpr (std::is_same_v<T, RdataA> || std::is_same_v<T, RdataAaaa>) {
          return value.address.ToString();
        } else if constexpr (std::is_same_v<T, RdataNs>) {
          return value.host.ToText();
        } else if constexpr (std::is_same_v<T, RdataCname> || std::is_same_v<T, RdataPtr> ||
                             std::is_same_v<T, RdataDname>) {
          return value.target.ToText();
        } else if constexpr (std::is_same_v<T, RdataSoa>) {
          return value.mname.ToText() + " " + value.rname.ToText() + " " +
                 std::to_string(value.serial) + " " + std::to_string(value.refresh_s) + " " +
                 std::to_string(value.retry_s) + " " + std::to_string(value.expire_s) + " " +
                 std::to_string(value.minimum_s);
        } else if constexpr (std::is_same_v<T, RdataMx>) {
          return std::to_string(value.preference) + " " + value.exchange.ToText();
        } else if constexpr (std::is_same_v<T, RdataSrv>) {
          return std::to_string(value.priority) + " " + std::to_string(value.weight) + " " +
                 std::to_string(value.port) + " " + value.target.ToText();
        } else if constexpr (std::is_same_v<T, RdataTxt>) {
          std::string text;
          for (const std::string& string : value.strings) {
            if (!text.empty()) text += ' ';
            text += CharacterStringToText(string);
          }
          return text;
        } else {
          static_assert(std::is_same_v<T, RdataHinfo>);
          return CharacterStringToText(value.cpu) + " " + CharacterStringToText(value.os);
        }
      },
      rdata);
}

std::string RecordToText(const ResourceRecord& record) {
  return record.owner.ToText() + " " + std::to_string(record.ttl_s) + " " +
         RrClassToText(record.cls) + " " + RrTypeToText(record.type) + " " +
         RdataToText(record.rdata);
}

std::string QuestionToText(const Question& question) {
  return question.name.ToText() + " " + RrClassToText(question.cls) + " " +
         RrTypeToText(question.type);
}

std::string MessageToText(const Message& message) {
  const Header& header = message.header;
  std::string text = ";; ->>HEADER<<- opcode: " + OpcodeToText(header.opcode) +
                     ", status: " + RcodeToText(message.rcode()) +
                     ", id: " + std::to_string(header.id) + "\n;; flags:";
  const struct {
    bool set;
    const char* name;
  } flags[] = {{header.qr, "qr"}, {header.aa, "aa"}, {header.tc, "tc"}, {header.rd, "rd"},
               {header.ra, "ra"}, {header.z, "z"},   {header.ad, "ad"}, {header.cd, "cd"}};
  for (const auto& flag : flags) {
    if (flag.set) text += std::string(" ") + flag.name;
  }
  text += "; QUERY: " + std::to_string(message.questions.size()) +
          ", ANSWER: " + std::to_string(message.answers.size()) +
          ", AUTHORITY: " + std::to_string(message.authorities.size()) + ", ADDITIONAL: " +
          std::to_string(message.additionals.size() + (message.edns.has_value() ? 1 : 0)) + "\n";
  if (message.edns.has_value()) {
    const Edns& edns = *message.edns;
    text += "\n;; OPT PSEUDOSECTION:\n; EDNS: version: " + std::to_string(edns.version) +
            ", flags:" + (edns.dnssec_ok ? " do" : "") +
            (edns.z != 0 ? "; MBZ: " + std::to_string(edns.z) : std::string()) +
            "; udp: " + std::to_string(edns.udp_payload_size) + "\n";
    if (!edns.options.empty()) text += "; OPTIONS: " + HexOf(edns.options) + "\n";
  }
  if (!message.questions.empty()) {
    text += "\n;; QUESTION SECTION:\n";
    for (const Question& question : message.questions)
      text += ";" + QuestionToText(question) + "\n";
  }
  for (Section section : {Section::kAnswer, Section::kAuthority, Section::kAdditional}) {
    const std::vector<ResourceRecord>& records = message.section(section);
    if (records.empty()) continue;
    text += "\n;; " + std::string(SectionToText(section)) + " SECTION:\n";
    for (const ResourceRecord& record : records) text += RecordToText(record) + "\n";
  }
  return text;
}

ParseError RecordFromText(std::string_view text, ResourceRecord* record) {
  std::vector<Token> tokens;
  if (!Tokenize(text, &tokens) || tokens.size() < 2) return ParseError::kBadText;
  ResourceRecord result;
  KDNS_RETURN_IF_PARSE_ERROR(Name::FromText(tokens[0].text, &result.owner));
  size_t i = 1;
  bool have_ttl = false;
  bool have_class = false;
  // TTL and class in either order; "ANY" is a class only when a type or TTL follows it.
  while (i + 1 < tokens.size()) {
    if (!have_ttl && IsAllDigits(tokens[i].text)) {
      if (!ParseNumber(tokens[i].text, &result.ttl_s)) return ParseError::kBadText;
      have_ttl = true;
    } else if (auto cls = RrClassFromText(tokens[i].text);
               !have_class && cls &&
               (RrTypeFromText(tokens[i + 1].text) || IsAllDigits(tokens[i + 1].text))) {
      result.cls = *cls;
      have_class = true;
    } else {
      break;
    }
    ++i;
  }
  auto type = RrTypeFromText(tokens[i].text);
  if (!type || *type == RrType::kOpt) return ParseError::kBadText;
  result.type = *type;
  KDNS_RETURN_IF_PARSE_ERROR(ParseRdataText(std::span<const Token>(tokens).subspan(i + 1),
                                            result.type, result.cls, &result.rdata));
  *record = std::move(result);
  return ParseError::kOk;
}

}  // namespace kdns::dns

#include "sidecar/go_format.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <system_error>

namespace kdns::sidecar {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// The length of the valid UTF-8 sequence at text[i] (2..4), or 0 when it is not one
// (overlong forms, surrogates and code points above U+10FFFF are invalid, as in Go).
size_t Utf8Length(std::string_view text, size_t i, uint32_t* rune) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const uint8_t b0 = byte(0);
  size_t length = 0;
  uint32_t value = 0;
  uint32_t min = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2, value = b0 & 0x1f, min = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3, value = b0 & 0x0f, min = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4, value = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xc0) != 0x80) return 0;
    value = (value << 6) | (byte(k) & 0x3f);
  }
  if (value < min || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
  *rune = value;
  return length;
}

void AppendU4(std::string& out, uint32_t value) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xf];
}

}  // namespace

std::string GoJsonFloat(double value) {
  if (!std::isfinite(value)) return "0";
  char buffer[64];
  const double magnitude = std::fabs(value);
  const bool exponent = magnitude != 0 && (magnitude < 1e-6 || magnitude >= 1e21);
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value,
                    exponent ? std::chars_format::scientific : std::chars_format::fixed);
  if (ec != std::errc()) return "0";
  std::string text(buffer, end);
  // Go's json: "clean up e-09 to e-9".
  const size_t n = text.size();
  if (exponent && n >= 4 && text[n - 4] == 'e' && text[n - 3] == '-' && text[n - 2] == '0') {
    text.erase(n - 2, 1);
  }
  return text;
}

std::string GoJsonString(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '<':
        case '>':
        case '&':
          AppendU4(out, c);
          break;
        default:
          if (c < 0x20) {
            AppendU4(out, c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    uint32_t rune = 0;
    const size_t length = Utf8Length(text, i, &rune);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
    } else if (rune == 0x2028 || rune == 0x2029) {
      AppendU4(out, rune);
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  out += '"';
  return out;
}

std::string GoQuote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c >= 0x80) {
      uint32_t rune = 0;
      const size_t length = Utf8Length(text, i, &rune);
      if (length > 0) {
        out.append(text.substr(i, length));
        i += length;
        continue;
      }
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

double GoSeconds(int64_t ns) {
  constexpr int64_t kSecond = 1'000'000'000;
  const int64_t seconds = ns / kSecond;
  const int64_t rest = ns % kSecond;
  return static_cast<double>(seconds) + static_cast<double>(rest) / 1e9;
}

}  // namespace kdns::sidecar

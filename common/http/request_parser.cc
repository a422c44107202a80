#include "common/http/request_parser.h"

#include <algorithm>
#include <cctype>

namespace kdns::http {
namespace {

using Status = RequestParser::Status;
using Result = RequestParser::Result;

Result Error(int status) {
  Result r;
  r.status = Status::kError;
  r.error_status = status;
  return r;
}

// tchar (RFC 9110 5.6.2).
bool IsTokenChar(unsigned char c) {
  if (std::isalnum(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return IsTokenChar(static_cast<unsigned char>(c));
  });
}

// field-value characters: VCHAR, obs-text, SP, HTAB (RFC 9110 5.5).
bool IsFieldValueChar(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Parses "HTTP/1.x"; returns the HTTP status to fail with, or 0.
int ParseVersion(std::string_view v, int* minor) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || v[6] != '.' ||
      !std::isdigit(static_cast<unsigned char>(v[5])) ||
      !std::isdigit(static_cast<unsigned char>(v[7]))) {
    return 400;
  }
  if (v[5] != '1') return 505;
  // A higher 1.x minor version is served as 1.1 (RFC 9110 6.2).
  *minor = std::min(v[7] - '0', 1);
  return 0;
}

// Fills path and query from the request-target; false if it is not one we serve.
bool SplitTarget(std::string_view target, Request* request) {
  if (!std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    return false;
  }
  // absolute-form (RFC 9112 3.2.2): keep the path and query, drop scheme and authority.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() &&
        EqualsIgnoreCase(target.substr(0, scheme.size()), scheme)) {
      std::string_view rest = target.substr(scheme.size());
      size_t slash = rest.find_first_of("/?");
      if (slash == 0) return false;  // no authority
      target = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
      if (target.front() == '?') {
        request->path.assign(1, '/');
        request->query = std::string(target.substr(1));
        return true;
      }
      break;
    }
  }
  if (target.empty() || target.front() != '/') return false;  // origin-form only
  size_t q = target.find('?');
  request->path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) request->query = std::string(target.substr(q + 1));
  return true;
}

}  // namespace

std::string_view Request::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return {};
}

Result RequestParser::Parse(std::string_view buffer) const {
  // Split the head into lines, bounded by max_header_bytes and max_headers.
  std::vector<std::string_view> lines;
  size_t pos = 0;
  for (;;) {
    size_t newline = buffer.find('\n', pos);
    if (newline == std::string_view::npos) {
      if (buffer.size() > limits_.max_header_bytes) return Error(lines.empty() ? 414 : 431);
      Result r;
      r.status = Status::kIncomplete;
      return r;
    }
    if (newline + 1 > limits_.max_header_bytes) return Error(lines.empty() ? 414 : 431);
    std::string_view line = buffer.substr(pos, newline - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = newline + 1;
    if (line.empty()) {
      if (lines.empty()) continue;  // empty lines before the request line (RFC 9112 2.2)
      break;
    }
    if (lines.size() > limits_.max_headers) return Error(431);
    lines.push_back(line);
  }

  Result result;
  Request& request = result.request;

  // request-line = method SP request-target SP HTTP-version
  std::string_view request_line = lines[0];
  size_t sp1 = request_line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || request_line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Error(400);
  }
  std::string_view method = request_line.substr(0, sp1);
  std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!IsToken(method) || target.empty()) return Error(400);
  if (int status = ParseVersion(request_line.substr(sp2 + 1), &request.version_minor)) {
    return Error(status);
  }
  request.method = std::string(method);
  request.target = std::string(target);
  if (!SplitTarget(target, &request)) return Error(400);

  // Header fields.
  size_t hosts = 0;
  bool has_content_length = false;
  size_t content_length = 0;
  bool close = false;
  bool keep_alive = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Error(400);
    // Rejects obs-fold (a line starting with whitespace) and space before the colon
    // (RFC 9112 5.1, 5.2).
    std::string_view name = line.substr(0, colon);
    if (!IsToken(name)) return Error(400);
    std::string_view value = TrimOws(line.substr(colon + 1));
    if (!std::all_of(value.begin(), value.end(),
                     [](char c) { return IsFieldValueChar(static_cast<unsigned char>(c)); })) {
      return Error(400);
    }
    std::string lower = Lower(name);
    if (lower == "host") {
      ++hosts;
    } else if (lower == "transfer-encoding") {
      return Error(501);  // chunked request bodies: not implemented, not needed
    } else if (lower == "content-length") {
      if (value.empty() || value.size() > 18 ||
          !std::all_of(value.begin(), value.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        return Error(value.size() > 18 ? 413 : 400);
      }
      size_t length = std::stoull(std::string(value));
      if (has_content_length && length != content_length) return Error(400);
      has_content_length = true;
      content_length = length;
    } else if (lower == "connection") {
      std::string_view options = value;
      while (!options.empty()) {
        size_t comma = options.find(',');
        std::string_view option = TrimOws(options.substr(0, comma));
        if (EqualsIgnoreCase(option, "close")) close = true;
        if (EqualsIgnoreCase(option, "keep-alive")) keep_alive = true;
        options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
      }
    }
    request.headers.emplace_back(std::move(lower), std::string(value));
  }
  if (request.version_minor >= 1 ? hosts != 1 : hosts > 1) return Error(400);
  if (content_length > limits_.max_body_bytes) return Error(413);
  if (buffer.size() - pos < content_length) {
    Result r;
    r.status = Status::kIncomplete;
    return r;
  }
  request.keep_alive = !close && (request.version_minor >= 1 || keep_alive);
  result.status = Status::kComplete;
  result.consumed = pos + content_length;
  return result;
}

}  // namespace kdns::http

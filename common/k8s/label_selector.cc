#include "common/k8s/label_selector.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/base/trim.h"

namespace kdns::k8s {
namespace {

constexpr size_t kMaxNameLength = 63;
constexpr size_t kMaxPrefixLength = 253;

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A label name or value: [A-Za-z0-9._-], alphanumeric at both ends, at most 63 characters.
// Values may be empty; names may not.
bool IsLabelToken(std::string_view text) {
  if (text.size() > kMaxNameLength) return false;
  if (text.empty()) return true;
  if (!IsAlnum(text.front()) || !IsAlnum(text.back())) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A DNS subdomain: lower-case labels of [a-z0-9-] joined by dots.
bool IsDnsSubdomain(std::string_view text) {
  if (text.empty() || text.size() > kMaxPrefixLength) return false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t dot = text.find('.', start);
    std::string_view label = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (label.empty() || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

bool IsLabelKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return !key.empty() && IsLabelToken(key);
  std::string_view name = key.substr(slash + 1);
  return IsDnsSubdomain(key.substr(0, slash)) && !name.empty() && IsLabelToken(name);
}

constexpr std::string_view kSpace = " \t\r\n";

// Splits at commas outside parentheses ("a in (x,y),b" → "a in (x,y)", "b"). Unbalanced
// parentheses: nullopt.
std::optional<std::vector<std::string_view>> SplitRequirements(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') {
      if (++depth > 1) return std::nullopt;
    } else if (text[i] == ')') {
      if (--depth < 0) return std::nullopt;
    } else if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return std::nullopt;
  parts.push_back(text.substr(start));
  return parts;
}

// The word operator ("in", "notin") after the key, followed by a space or '('.
bool TakeWord(std::string_view* rest, std::string_view word) {
  if (rest->substr(0, word.size()) != word) return false;
  std::string_view after = rest->substr(word.size());
  if (!after.empty() && !std::isspace(static_cast<unsigned char>(after.front())) &&
      after.front() != '(') {
    return false;
  }
  *rest = Trim(after, kSpace);
  return true;
}

}  // namespace

Result<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  if (Trim(text, kSpace).empty()) return selector;
  auto parts = SplitRequirements(text);
  if (!parts)
    return Result<LabelSelector>::Failure("unbalanced parentheses in \"" + std::string(text) +
                                          "\"");
  for (std::string_view raw : *parts) {
    std::string_view part = Trim(raw, kSpace);
    auto fail = [&](std::string_view why) {
      return Result<LabelSelector>::Failure("\"" + std::string(part) + "\": " + std::string(why));
    };
    if (part.empty()) return fail("empty requirement");
    Requirement requirement;
    if (part.front() == '!') {
      requirement.op = Op::kNotExists;
      requirement.key = Trim(part.substr(1), kSpace);
    } else {
      size_t key_end = 0;
      while (key_end < part.size() &&
             (IsAlnum(part[key_end]) || part[key_end] == '-' || part[key_end] == '_' ||
              part[key_end] == '.' || part[key_end] == '/')) {
        ++key_end;
      }
      requirement.key = part.substr(0, key_end);
      std::string_view rest = Trim(part.substr(key_end), kSpace);
      if (rest.empty()) {
        requirement.op = Op::kExists;
      } else if (rest.substr(0, 2) == "==" || rest.substr(0, 2) == "!=" || rest.front() == '=') {
        requirement.op = rest.front() == '!' ? Op::kNotEquals : Op::kEquals;
        rest.remove_prefix(rest.substr(0, 2) == "==" || rest.front() == '!' ? 2 : 1);
        std::string_view value = Trim(rest, kSpace);
        if (!IsLabelToken(value)) return fail("not a label value");
        requirement.values.emplace_back(value);
      } else if (const bool in = TakeWord(&rest, "in"); in || TakeWord(&rest, "notin")) {
        requirement.op = in ? Op::kIn : Op::kNotIn;
        if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
          return fail("a set must be in parentheses");
        }
        rest = rest.substr(1, rest.size() - 2);
        size_t start = 0;
        while (true) {
          size_t comma = rest.find(',', start);
          std::string_view value = Trim(
              rest.substr(start, comma == std::string_view::npos ? comma : comma - start), kSpace);
          if (!IsLabelToken(value)) return fail("not a label value");
          requirement.values.emplace_back(value);
          if (comma == std::string_view::npos) break;
          start = comma + 1;
        }
        std::sort(requirement.values.begin(), requirement.values.end());
      } else {
        return fail("unknown operator (supported: =, ==, !=, in, notin, exists, !)");
      }
    }
    if (!IsLabelKey(requirement.key)) return fail("not a label key");
    selector.requirements_.push_back(std::move(requirement));
  }
  for (const Requirement& requirement : selector.requirements_) {
    if (!selector.text_.empty()) selector.text_ += ',';
    switch (requirement.op) {
      case Op::kExists:
        selector.text_ += requirement.key;
        break;
      case Op::kNotExists:
        selector.text_ += "!" + requirement.key;
        break;
      case Op::kEquals:
        selector.text_ += requirement.key + "=" + requirement.values[0];
        break;
      case Op::kNotEquals:
        selector.text_ += requirement.key + "!=" + requirement.values[0];
        break;
      case Op::kIn:
      case Op::kNotIn: {
        selector.text_ += requirement.key + (requirement.op == Op::kIn ? " in (" : " notin (");
        for (size_t i = 0; i < requirement.values.size(); ++i) {
          if (i > 0) selector.text_ += ',';
          selector.text_ += requirement.values[i];
        }
        selector.text_ += ')';
        break;
      }
    }
  }
  return selector;
}

bool LabelSelector::Matches(const Labels& labels) const {
  for (const Requirement& requirement : requirements_) {
    auto it = std::find_if(labels.begin(), labels.end(),
                           [&](const auto& label) { return label.first == requirement.key; });
    const bool present = it != labels.end();
    bool holds = false;
    switch (requirement.op) {
      case Op::kExists:
        holds = present;
        break;
      case Op::kNotExists:
        holds = !present;
        break;
      case Op::kEquals:
        holds = present && it->second == requirement.values[0];
        break;
      case Op::kNotEquals:
        holds = !present || it->second != requirement.values[0];
        break;
      case Op::kIn:
        holds = present && std::binary_search(requirement.values.begin(), requirement.values.end(),
                                              it->second);
        break;
      case Op::kNotIn:
        holds = !present || !std::binary_search(requirement.values.begin(),
                                                requirement.values.end(), it->second);
        break;
    }
    if (!holds) return false;
  }
  return true;
}

}  // namespace kdns::k8s

#include "common/metrics/text_merge.h"

#include <unordered_map>
#include <vector>

#include "common/metrics/text_parser.h"

namespace kdns::metrics {
namespace {

struct Family {
  std::string name;
  std::string type;     // empty: no TYPE line (untyped)
  std::string header;   // its HELP and TYPE lines
  std::string samples;  // its sample lines
};

// The family a sample named `sample` belongs to when the family being read is `family`:
// itself, or a histogram's or summary's _bucket, _sum and _count.
bool BelongsTo(std::string_view sample, std::string_view family) {
  if (sample == family) return true;
  if (!sample.starts_with(family)) return false;
  const std::string_view suffix = sample.substr(family.size());
  return suffix == "_bucket" || suffix == "_sum" || suffix == "_count";
}

// Splits valid exposition text into its families, in order.
std::vector<Family> Split(std::string_view text) {
  std::vector<Family> families;
  auto family_for = [&](std::string_view name) -> Family& {
    if (families.empty() || families.back().name != name) {
      families.emplace_back();
      families.back().name = name;
    }
    return families.back();
  };
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      std::string_view rest = line.substr(7);
      const std::string_view name = rest.substr(0, rest.find(' '));
      Family& family = family_for(name);
      if (line.starts_with("# TYPE ")) family.type = std::string(rest.substr(name.size() + 1));
      family.header.append(line).push_back('\n');
    } else if (!line.empty() && line.front() != '#') {
      const std::string_view name = line.substr(0, line.find_first_of("{ "));
      Family& family = !families.empty() && BelongsTo(name, families.back().name)
                           ? families.back()
                           : family_for(name);
      family.samples.append(line).push_back('\n');
    }
  }
  return families;
}

}  // namespace

std::optional<std::string> MergeText(std::string_view base, std::string_view extra,
                                     std::string* error) {
  if (!ParseText(extra, error)) return std::nullopt;
  std::vector<Family> families = Split(base);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < families.size(); ++i) index.emplace(families[i].name, i);
  for (Family& other : Split(extra)) {
    auto it = index.find(other.name);
    if (it == index.end()) {
      index.emplace(other.name, families.size());
      families.push_back(std::move(other));
      continue;
    }
    Family& ours = families[it->second];
    if (!other.type.empty() && other.type != ours.type) {
      *error = other.name + " is a " + other.type + " here but a " +
               (ours.type.empty() ? std::string("untyped") : ours.type) + " already";
      return std::nullopt;
    }
    ours.samples += other.samples;
  }
  std::string merged;
  merged.reserve(base.size() + extra.size());
  for (const Family& family : families) merged.append(family.header).append(family.samples);
  // A series in both texts: the merge is not valid exposition.
  if (!ParseText(merged, error)) return std::nullopt;
  return merged;
}

}  // namespace kdns::metrics

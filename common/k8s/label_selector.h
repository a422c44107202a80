// LabelSelector: a Kubernetes label selector in its string form (the `labelSelector` query
// parameter, `kubectl -l`), parsed once and matched against an object's labels. kubedns's
// --labels (CoreDNS `kubernetes` ... `labels`) uses it twice with one meaning: the text goes
// to the API server with every Services LIST and WATCH, and Matches() applies it to objects
// that did not come through such a watch (the objects file).
//
// Syntax (k8s.io/apimachinery labels.Parse): requirements joined by commas, all of which
// must hold:
//   key  !key  key=value  key==value  key!=value  key in (v1,v2)  key notin (v1,v2)
// `!=` and `notin` also hold when the key is absent. Keys are [prefix/]name with a DNS
// subdomain prefix and a name of at most 63 characters of [A-Za-z0-9._-], alphanumeric at
// both ends; values the same, or empty. The numeric `<` and `>` are not supported (an error
// at start-up, not a silent mismatch). An empty selector matches everything.
//
// Pure value; any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/k8s/result.h"

namespace kdns::k8s {

class LabelSelector {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // The selector of `text`, or an error naming the requirement that is wrong.
  static Result<LabelSelector> Parse(std::string_view text);

  bool empty() const { return requirements_.empty(); }
  // True when every requirement holds for `labels` (key, value pairs; keys unique).
  bool Matches(const Labels& labels) const;
  // The canonical text (requirements as parsed, in order, without spaces): what is sent as
  // the labelSelector query parameter.
  const std::string& text() const { return text_; }

 private:
  enum class Op : uint8_t { kExists, kNotExists, kEquals, kNotEquals, kIn, kNotIn };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;  // one for = and !=; the set for in and notin
  };

  std::vector<Requirement> requirements_;
  std::string text_;
};

}  // namespace kdns::k8s

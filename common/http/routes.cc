#include "common/http/routes.h"

#include <utility>

namespace kdns::http {

void Routes::Handle(const std::string& path, Handler handler) { exact_[path] = std::move(handler); }

void Routes::HandlePrefix(const std::string& prefix, Handler handler) {
  prefixes_[prefix] = std::move(handler);
}

const Handler* Routes::Find(const std::string& path) const {
  if (auto it = exact_.find(path); it != exact_.end()) return &it->second;
  const Handler* handler = nullptr;
  size_t best = 0;
  for (const auto& [prefix, h] : prefixes_) {
    if (path.compare(0, prefix.size(), prefix) == 0 && prefix.size() >= best) {
      best = prefix.size();
      handler = &h;
    }
  }
  return handler;
}

}  // namespace kdns::http

// ObjectKey: "namespace/name", the key kubedns's record builders index Kubernetes objects
// by (Services, EndpointSlices, ServiceImports). Pure; any thread.
#pragma once

#include <string>
#include <string_view>

namespace kdns::kubedns {

inline std::string ObjectKey(std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

}  // namespace kdns::kubedns

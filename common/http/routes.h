// Routes: the paths an HTTP server answers and their handlers; the one registry of the
// tree's HTTP endpoints (/metrics, /healthz, /readiness, /healthcheck/<label>, /cache,
// /debug/*). A Server dispatches through its Routes; a ServerThread fills one before its
// thread starts and hands it to the Server it runs, so a route is registered the same way
// on either.
//
// Matching: Handle(path) matches the path exactly; HandlePrefix(prefix) matches paths that
// start with prefix (the longest prefix wins); exact matches win over prefixes.
//
// A value; not thread-safe: fill it, then read it from the server's thread.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/http/request_parser.h"
#include "common/http/response.h"

namespace kdns::http {

using Handler = std::function<Response(const Request& request)>;

class Routes {
 public:
  void Handle(const std::string& path, Handler handler);
  void HandlePrefix(const std::string& prefix, Handler handler);

  // The handler of `path`; nullptr when no route matches.
  const Handler* Find(const std::string& path) const;

 private:
  std::map<std::string, Handler> exact_;
  std::map<std::string, Handler> prefixes_;
};

}  // namespace kdns::http

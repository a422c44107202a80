// A blocking HTTP/1.1 GET for tests of servers that run on threads of their own
// (http::ServerThread, kubedns's and frontend-cache's ports): no loop needed. Thread: the
// test's (Catch's REQUIRE).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/loop/socket_address.h"

namespace kdns::http::testing {

// GET `path` on a new connection (Connection: close): "<status> <body>", e.g. "200 ok".
inline std::string BlockingGet(const loop::SocketAddress& server, const std::string& path) {
  const int fd = socket(server.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  REQUIRE(connect(fd, server.sockaddr_ptr(), server.sockaddr_len()) == 0);
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  return response.substr(9, 3) + " " + response.substr(body + 4);
}

}  // namespace kdns::http::testing

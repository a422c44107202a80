// ServerThread: an http::Server on a thread and loop of its own, for programs whose DNS
// threads must never wait on HTTP (kubedns's readiness and metrics ports).
//
// Register routes, then Start(): the thread binds (Start returns the bind error, if any)
// and serves until Stop() or destruction, which closes every connection and joins the
// thread. Handlers run on the HTTP thread: whatever they read must be safe to read from
// there (atomic counters, immutable snapshots), and they must not block for long (they
// delay other HTTP requests, never DNS).
//
// Thread: construct, Handle, Start and Stop from one owning thread.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/http/server.h"
#include "common/loop/loop.h"
#include "common/loop/socket_address.h"
#include "common/loop/task_queue.h"

namespace kdns::http {

class ServerThread {
 public:
  explicit ServerThread(const Server::Options& options) : options_(options) {}
  ~ServerThread() { Stop(); }
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;

  // Before Start() only.
  void Handle(const std::string& path, Handler handler);
  void HandlePrefix(const std::string& prefix, Handler handler);

  // Starts the thread and waits until it listens. False with *error if binding failed.
  [[nodiscard]] bool Start(std::string* error);
  // Stops serving and joins the thread. Idempotent.
  void Stop();

  // The bound address (after a successful Start).
  const loop::SocketAddress& local_address() const { return local_address_; }

 private:
  void Run(std::promise<std::string>* started);

  Server::Options options_;
  Routes routes_;  // handed to the Server when the thread starts
  // Owned and used by the HTTP thread only.
  std::unique_ptr<Server> server_;
  loop::Loop* loop_ = nullptr;
  std::thread thread_;
  loop::TaskQueue::Poster poster_;
  loop::SocketAddress local_address_;
};

}  // namespace kdns::http

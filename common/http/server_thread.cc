#include "common/http/server_thread.h"

#include <glog/logging.h>

#include "common/base/thread_name.h"
#include "common/loop/loop.h"

namespace kdns::http {

void ServerThread::Handle(const std::string& path, Handler handler) {
  DCHECK(!thread_.joinable()) << "routes are fixed once the thread runs";
  routes_.Handle(path, std::move(handler));
}

void ServerThread::HandlePrefix(const std::string& prefix, Handler handler) {
  DCHECK(!thread_.joinable()) << "routes are fixed once the thread runs";
  routes_.HandlePrefix(prefix, std::move(handler));
}

bool ServerThread::Start(std::string* error) {
  if (thread_.joinable()) return true;
  std::promise<std::string> started;
  std::future<std::string> result = started.get_future();
  thread_ = std::thread([this, &started] { Run(&started); });
  // Run() sets poster_ and local_address_ before fulfilling the promise.
  *error = result.get();
  if (!error->empty()) {
    thread_.join();
    return false;
  }
  return true;
}

void ServerThread::Stop() {
  if (!thread_.joinable()) return;
  // Runs on the HTTP thread: closes the listener and every connection, then lets Run()
  // return. Post() fails only if the loop already ended; join returns at once then.
  poster_.Post([this] {
    server_.reset();
    loop_->Stop();
  });
  thread_.join();
  poster_ = loop::TaskQueue::Poster();
}

void ServerThread::Run(std::promise<std::string>* started) {
  SetThreadName("http");
  loop::Loop loop;
  {
    server_ = std::make_unique<Server>(loop, options_, std::move(routes_));
    std::string error;
    if (!server_->Start(&error)) {
      server_.reset();
      CHECK(loop.Close());
      started->set_value(error);  // `started` belongs to Start(): not touched again
      return;
    }
    loop::TaskQueue queue(loop);
    loop_ = &loop;
    local_address_ = server_->GetLocalAddress();
    poster_ = queue.poster();
    started->set_value("");
    loop.Run();
    server_.reset();  // in case the loop ended some other way
    loop_ = nullptr;
  }
  if (!loop.Close()) {
    LOG(ERROR) << "HTTP server thread: handles left open at exit";
  }
}

}  // namespace kdns::http

#include "frontend-cache/hosts_watcher.h"

#include <glog/logging.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "common/base/thread_name.h"
#include "common/loop/file_watcher.h"

namespace kdns::frontend {

std::vector<WatchedDirectory> WatchedDirectories(const std::vector<std::string>& paths) {
  std::vector<WatchedDirectory> dirs;
  for (const std::string& path : paths) {
    const size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    if (dir.empty()) dir = "/";
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    auto same = [&dir](const WatchedDirectory& watched) { return watched.dir == dir; };
    auto found = std::find_if(dirs.begin(), dirs.end(), same);
    if (found == dirs.end()) found = dirs.insert(dirs.end(), WatchedDirectory{dir, {}});
    if (std::find(found->names.begin(), found->names.end(), name) == found->names.end()) {
      found->names.push_back(std::move(name));
    }
  }
  return dirs;
}

HostsWatcher::HostsWatcher(Options options, std::function<void()> on_change)
    : options_(std::move(options)), on_change_(std::move(on_change)) {}

HostsWatcher::~HostsWatcher() { Stop(); }

void HostsWatcher::Start() {
  CHECK(!thread_.joinable()) << "HostsWatcher started twice";
  std::promise<loop::TaskQueue::Poster> started;
  std::future<loop::TaskQueue::Poster> poster = started.get_future();
  thread_ = std::thread([this, &started] { Run(&started); });
  poster_ = poster.get();
}

void HostsWatcher::Stop() {
  // Post fails (harmlessly) when the thread never started or already ended.
  (void)poster_.Post([this] { run_loop_->Stop(); });
  if (thread_.joinable()) thread_.join();
}

void HostsWatcher::Run(std::promise<loop::TaskQueue::Poster>* started) {
  SetThreadName("hosts-watcher");
  loop::Loop loop;
  {
    run_loop_ = &loop;
    loop::TaskQueue tasks(loop);
    std::vector<std::unique_ptr<loop::FileWatcher>> watchers;
    for (WatchedDirectory& dir : WatchedDirectories(options_.paths)) {
      loop::FileWatcher::Options watch;
      watch.dir = std::move(dir.dir);
      watch.names = std::move(dir.names);
      watch.poll_interval_ms = options_.poll_interval_ms;
      watchers.push_back(std::make_unique<loop::FileWatcher>(
          loop, std::move(watch), [this](loop::FileWatcher::Trigger) { on_change_(); }));
      watchers.back()->Start();
    }
    started->set_value(tasks.poster());
    loop.Run();  // until Stop()
  }
  run_loop_ = nullptr;
  CHECK(loop.Close()) << "the hosts watcher's loop leaked a handle";
}

}  // namespace kdns::frontend

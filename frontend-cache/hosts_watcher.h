// HostsWatcher: tells frontend-cache when its hosts files (/etc/hosts, --addn-hosts) may
// have changed, so their answers follow the files without a restart or a SIGHUP, as
// CoreDNS's `hosts` plugin re-reads its file.
//
// One loop::FileWatcher per directory holding a hosts file, narrowed to the files' names:
// inotify reacts at once to a file edited in place or renamed over, and to a ConfigMap
// volume's `..data` symlink swap (a hosts file mounted from a ConfigMap is
// `<dir>/<key> -> ..data/<key>`); a poll every poll_interval_ms (--hosts-reload) covers
// what inotify misses. The watcher only says "look again": on_change reads the files
// (HostsFiles, which keeps a file's last good version) and publishes what changed.
//
// Ownership and threads: Start() starts a thread of its own with its own loop, on which
// the FileWatchers live and on_change runs (reading a large hosts file never delays a DNS
// thread). Stop() (also the destructor) ends it; no on_change runs after Stop() returns.
// Start and Stop from one owning thread.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/loop/loop.h"
#include "common/loop/task_queue.h"

namespace kdns::frontend {

class HostsWatcher {
 public:
  struct Options {
    std::vector<std::string> paths;
    uint64_t poll_interval_ms = 5000;
  };

  HostsWatcher(Options options, std::function<void()> on_change);
  ~HostsWatcher();  // Stop()
  HostsWatcher(const HostsWatcher&) = delete;
  HostsWatcher& operator=(const HostsWatcher&) = delete;

  // Starts the watcher thread; returns once the watches are armed. Once.
  void Start();
  // Ends the thread. Idempotent.
  void Stop();

 private:
  void Run(std::promise<loop::TaskQueue::Poster>* started);

  const Options options_;
  const std::function<void()> on_change_;
  std::thread thread_;
  loop::TaskQueue::Poster poster_;
  loop::Loop* run_loop_ = nullptr;  // the watcher thread's, while it runs
};

// The directories of `paths` with the names watched in each (the paths' last components),
// in the order first seen.
struct WatchedDirectory {
  std::string dir;
  std::vector<std::string> names;

  friend bool operator==(const WatchedDirectory&, const WatchedDirectory&) = default;
};
std::vector<WatchedDirectory> WatchedDirectories(const std::vector<std::string>& paths);

}  // namespace kdns::frontend

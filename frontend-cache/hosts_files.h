// HostsFiles: the hosts files frontend-cache answers from (/etc/hosts unless --no-hosts,
// then every --addn-hosts, in that order), each with the last version of it that was good,
// so that a reload (a change seen by HostsWatcher, or SIGHUP) never loses answers to a
// file caught half-written, removed or broken.
//
// The first read of a file is dnsmasq's: one that cannot be read is left out, a bad line is
// skipped, the rest is served. A later read replaces the file's entries only when it could
// be read and every line parsed; otherwise the version before stays, and the read counts as
// rejected (kdns_frontend_hosts_reload_rejected_total): a file is outside input (STYLE.md,
// "Errors"), and half of an edited file is worse than the whole old one. To empty a hosts
// file, write it empty; removing it keeps its last entries.
//
// Thread: not thread-safe; FrontendServer calls it under its reload lock.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "frontend-cache/hosts_file.h"
#include "frontend-cache/options.h"

namespace kdns::frontend {

class HostsFiles {
 public:
  explicit HostsFiles(std::vector<std::string> paths);

  struct Outcome {
    bool changed = false;  // some file's entries differ from the last read's
    // Files whose previous version was kept (after the first read), each counted once
    // until it is read well again or fails in another way.
    size_t rejected = 0;
  };
  // Reads every file again; logs what it skipped or rejected, one line each.
  Outcome Read();

  // Every file's current entries, in the files' order.
  std::vector<HostsEntry> Entries() const;
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  struct File {
    bool loaded = false;  // a version was accepted (at least one read succeeded)
    std::vector<HostsEntry> entries;
    std::string problem;  // what the last read could not use, as logged; empty: none
  };
  // Reads paths_[i] into files_[i]; true when its entries changed.
  bool ReadOne(size_t i, Outcome* outcome);
  // Logs `problem` and counts a rejected read, unless it is the one already reported.
  static void Report(File* file, std::string problem, Outcome* outcome);

  const std::vector<std::string> paths_;
  std::vector<File> files_;
};

// The hosts files of the options: /etc/hosts unless --no-hosts, then every --addn-hosts.
std::vector<std::string> HostsFilePaths(const Options& options);

}  // namespace kdns::frontend

#include "frontend-cache/hosts_files.h"

#include <glog/logging.h>

#include <utility>

namespace kdns::frontend {

HostsFiles::HostsFiles(std::vector<std::string> paths)
    : paths_(std::move(paths)), files_(paths_.size()) {}

HostsFiles::Outcome HostsFiles::Read() {
  Outcome outcome;
  for (size_t i = 0; i < paths_.size(); ++i) {
    if (ReadOne(i, &outcome)) outcome.changed = true;
  }
  return outcome;
}

bool HostsFiles::ReadOne(size_t i, Outcome* outcome) {
  const std::string& path = paths_[i];
  File& file = files_[i];
  HostsFile read;
  std::string error;
  if (!LoadHostsFile(path, &read, &error)) {
    // dnsmasq carries on without a file it cannot read at start (it may appear later).
    Report(&file,
           file.loaded
               ? error + "; its previous " + std::to_string(file.entries.size()) + " entries kept"
               : error + "; serving without it",
           outcome);
    return false;
  }
  if (file.loaded && !read.skipped.empty()) {
    Report(&file,
           path + ": " + std::to_string(read.skipped.size()) + " bad line(s), first " +
               read.skipped.front() + "; its previous " + std::to_string(file.entries.size()) +
               " entries kept",
           outcome);
    return false;
  }
  for (const std::string& skipped : read.skipped) {
    LOG(WARNING) << "hosts file " << path << ": skipped " << skipped;
  }
  file.problem.clear();
  const bool changed = !file.loaded || read.entries != file.entries;
  file.loaded = true;
  file.entries = std::move(read.entries);
  return changed;
}

void HostsFiles::Report(File* file, std::string problem, Outcome* outcome) {
  // The watcher looks again every few seconds: a file that stays broken is reported once.
  if (problem == file->problem) return;
  LOG(WARNING) << "hosts file " << problem;
  if (file->loaded) ++outcome->rejected;
  file->problem = std::move(problem);
}

std::vector<HostsEntry> HostsFiles::Entries() const {
  std::vector<HostsEntry> all;
  for (const File& file : files_) all.insert(all.end(), file.entries.begin(), file.entries.end());
  return all;
}

std::vector<std::string> HostsFilePaths(const Options& options) {
  std::vector<std::string> paths;
  if (!options.no_hosts) paths.emplace_back(kDefaultHostsFile);
  paths.insert(paths.end(), options.addn_hosts.begin(), options.addn_hosts.end());
  return paths;
}

}  // namespace kdns::frontend

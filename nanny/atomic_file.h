// Writing a file that another process reads at any moment (frontend-cache's servers file on
// SIGHUP, its metrics text file at every scrape): write a temporary file in the same
// directory, then rename it over the target, so a reader sees the old or the new contents,
// never a mix or a truncated file.
//
// Plain functions, no thread affinity.
#pragma once

#include <string>
#include <string_view>

namespace kdns::nanny {

// False with a one-line *error ("/run/nanny/servers.conf: write: No space left on device").
[[nodiscard]] bool WriteFileAtomically(const std::string& path, std::string_view contents,
                                       std::string* error);

}  // namespace kdns::nanny

// The build's version and commit, stamped in at build time from `git describe` (mk/version.sh
// writes them into a generated header that only common/base/version.cc includes, so a new
// version recompiles that one file). Shown by every program's --version, its start-up line,
// kdns_build_info{version,revision}, frontend-cache's version.bind answer and the API
// client's User-Agent.
#pragma once

namespace kdns {

// "0.2.0" for a tagged release, "0.2.0-3-gabc1234" three commits after it, "-dirty" appended
// for uncommitted changes, "0.0.0-dev-gabc1234" with no release tag in reach.
extern const char kVersion[];

// The commit built (a full hash), or "unknown" for a build outside git without one given.
extern const char kRevision[];

}  // namespace kdns

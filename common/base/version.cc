#include "common/base/version.h"

// Generated into the build directory by mk/version.sh (the Makefile's VERSION_H).
#include "kdns_version.h"

namespace kdns {

const char kVersion[] = KDNS_VERSION_STRING;
const char kRevision[] = KDNS_REVISION_STRING;

}  // namespace kdns

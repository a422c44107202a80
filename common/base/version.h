// The project's version string, shown by every program's --version.
#pragma once

namespace kdns {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace kdns

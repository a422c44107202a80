// Go-style durations as kube-dns's flags take them ("10s", "1m30s", "500ms", "2h"), so
// the same manifests keep working. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kdns {

// Milliseconds, or nullopt for malformed text. Units: ms, s, m, h; a bare "0" is zero;
// fractions are allowed ("1.5s"). Negative durations are rejected.
std::optional<uint64_t> ParseDurationMs(std::string_view text);

}  // namespace kdns

// MergeText: joins another process's exposition text into ours family by family, so that one
// scrape carries both (frontend-cache's /metrics with the nanny's file, --metrics-textfile).
// Appending the file as it is would repeat a family both export (process_*, kdns_build_info),
// which Prometheus rejects: here a family already in `base` gets the other's samples under its
// own HELP and TYPE, and new families follow at the end. The two processes' series of a shared
// family must differ in their labels (the nanny labels its own: program="nanny").
// Pure, any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kdns::metrics {

// nullopt, with the reason in *error, when `extra` does not parse, a family has another type
// in `extra` than in `base`, or a series is in both (`base` is trusted to be valid).
[[nodiscard]] std::optional<std::string> MergeText(std::string_view base, std::string_view extra,
                                                   std::string* error);

}  // namespace kdns::metrics

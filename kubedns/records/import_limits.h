// ImportLimits: the bounds on one multicluster ServiceImport (DESIGN.md section 7, "Tenants").
// A ServiceImport is written by a tenant (or a controller acting for one), so kubedns treats it
// as untrusted input: its names are checked as DNS names in their zone and its size is capped,
// so that one object cannot take the memory every other name is answered from. The flags are
// kubedns's --import-max-* (docs/operators.md, "Limits"); hits are counted as
// kdns_limit_hits_total{limit="import_invalid"|"import_too_large"|"import_name_conflict"}.
//
// A plain value; read on the source thread by MulticlusterWriter and KubesliceNamesWriter.
#pragma once

#include <cstdint>

namespace kdns::kubedns {

struct ImportLimits {
  // kubeslice spec.aliases[] of one import (--import-max-aliases).
  uint32_t max_aliases = 100;
  // kubeslice status.endpoints[] of one import, or the addresses of an MCS import's
  // EndpointSlices (--import-max-endpoints).
  uint32_t max_endpoints = 5000;
  // The characters of every name one kubeslice import brings (spec.dnsName, spec.aliases[],
  // status.endpoints[].dnsName), whether valid or not (--import-max-bytes).
  uint64_t max_name_bytes = 512 * 1024;
};

}  // namespace kdns::kubedns

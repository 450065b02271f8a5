// Level Zero extensions the backend uses that Debian's loader 1.8 headers (API 1.4) do not declare.
//
// - Intel's host-pointer import (compute-runtime's zex API, reached through
//   zeDriverGetExtensionFunctionAddress): signatures as published in Intel's zex headers.
// - ZE_extension_external_memmap_sysmem (spec 1.14): a descriptor chained into zeMemAllocHost that
//   maps existing, page-aligned system memory instead of allocating. The 1.8 headers lack it, so the
//   struct is declared here with the spec's layout. The two numeric values below (structure type and
//   the read-only host-allocation flag) come from newer headers this machine does not have; they are
//   the first thing to verify against a real driver's ze_api.h (see docs / the closing note).
#pragma once

#include "backends/level_zero/layer.hpp"

#include <level_zero/ze_api.h>

#include <cstdint>

namespace lwload::level_zero {

using ImportExternalPointerFn = ze_result_t(ZE_APICALL*)(ze_driver_handle_t driver, void* ptr, size_t size);
using ReleaseImportedPointerFn = ze_result_t(ZE_APICALL*)(ze_driver_handle_t driver, void* ptr);

inline constexpr const char* kImportExternalPointerName = "zexDriverImportExternalPointer";
inline constexpr const char* kReleaseImportedPointerName = "zexDriverReleaseImportedPointer";

inline constexpr const char* kExternalMemmapSysmemExtName = "ZE_extension_external_memmap_sysmem";
inline constexpr std::uint32_t kStructureTypeExternalMemmapSysmemExtDesc = 0x00020037;  // verify (spec 1.14)
inline constexpr ze_host_mem_alloc_flags_t kHostMemAllocFlagMemReadOnly = ZE_BIT(4);    // verify (spec 1.14)

struct ExternalMemmapSysmemExtDesc {
  std::uint32_t stype = kStructureTypeExternalMemmapSysmemExtDesc;
  const void* pNext = nullptr;
  const void* pSystemMemory = nullptr;  // page-aligned
  std::uint64_t size = 0;               // page-aligned
};

}  // namespace lwload::level_zero

// TEST DOUBLE: a simulated XRT driver for tests/test_xrt.cpp (there is no AMD NPU in CI).
//
// XRT (libxrt_coreutil) loads its driver shim from $XILINX_XRT/lib by mode; with
// XCL_EMULATION_MODE=noop that is lib/libxrt_noop.so.2, which this library is. XRT 2.13's shim
// interface is C++ (xrt_core::device subclasses, no public header), so the simulation does not
// re-declare it: it loads Debian's own noop shim (the device object XRT talks to) and takes over
// that device's buffer entry points — the slots of its vtable that hold the noop shim's alloc_bo,
// free_bo, map_bo, sync_bo, copy_bo, exec_buf, ... (found by address, so no slot number is assumed) — with
// the functions of sim_buffers.cpp. Everything above them is the real XRT: xrt::bo, its kinds,
// alignment checks, sub-buffers.
//
// The simulated device:
// - every buffer object has device memory of its own, a range of one memfd (outside the process's
//   address space, so the tests' host-memory measurements stay honest) at its device address;
//   what the host writes reaches it only through sync (XCL_BO_SYNC_BO_TO_DEVICE) or a device-side
//   copy (copy_bo), so a missing sync shows as wrong bytes on the device;
// - user-pointer buffers must be page-aligned; syncs and copies must stay inside their buffers;
//   anything else is refused (EINVAL) and counted as a violation;
// - environment, read at each call:
//     LWLOAD_XRT_SIM_REFUSE_USERPTR=file  user pointers into file-backed pages are refused
//                                        (EOPNOTSUPP), as drivers that pin for writing refuse
//                                        read-only file pages; =all refuses every user pointer
//                                        (an older amdxdna stack: "not supported")
//     LWLOAD_XRT_SIM_FAIL_ALLOC_AFTER=N  after N more buffer objects, allocations fail (ENOMEM)
//     LWLOAD_XRT_SIM_DEVICE_MEMORY=BYTES device-only memory the device has (default: unlimited)
// - hooks for the tests (extern "C"): lwload_xrt_sim_counter(name) — "live" buffer objects,
//   "violations", "userptr", "userptr_refused", "device_only", "host", "synced_bytes";
//   lwload_xrt_sim_read_device(address, dst, n) — the bytes the device sees at a device address
//   (xrt::bo::address()); lwload_xrt_sim_owner(address) — the XRT core device whose buffer holds
//   it; lwload_xrt_sim_describe(text, size) — the counters as one line.
#pragma once

#include <xrt.h>

#include <cstddef>

namespace xrt_sim {

// The noop device's buffer entry points as XRT 2.13 declares them (xrt_core::ishim), written as
// free functions taking the device (`self`, unused) first: the member-function calling convention.
unsigned alloc_bo(void* self, std::size_t size, unsigned flags);
unsigned alloc_userptr_bo(void* self, void* userptr, std::size_t size, unsigned flags);
void free_bo(void* self, unsigned handle);
void* map_bo(void* self, unsigned handle, bool write);
void unmap_bo(void* self, unsigned handle, void* addr);
void sync_bo(void* self, unsigned handle, xclBOSyncDirection dir, std::size_t size, std::size_t offset);
void copy_bo(void* self, unsigned dst, unsigned src, std::size_t size, std::size_t dst_offset, std::size_t src_offset);
void get_bo_properties(const void* self, unsigned handle, xclBOProperties* properties);
int export_bo(const void* self, unsigned handle);
unsigned import_bo(void* self, int fd);
// Commands: xrt::bo::copy sends XRT's copy command (ERT_START_COPYBO) in an exec buffer; the
// simulated device runs it at once (the device-side copy) and marks it completed.
int exec_buf(void* self, unsigned handle);
int exec_wait(const void* self, int timeout_ms);

}  // namespace xrt_sim

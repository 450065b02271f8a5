#!/usr/bin/env python3
# check: mutation testing — do the suites catch a fixed list of small bugs (docs/MUTATIONS.md).
"""Mutation testing: does the suite catch the bugs it is there to catch?

Applies a fixed list of small bugs (MUTATIONS below) one at a time to a scratch copy of the tree
(the tracked and untracked, not ignored, files of this checkout, copied to --scratch again before
each mutation; the checkout itself is never modified), rebuilds the scratch copy's build folder (ccache keeps rebuilds cheap
after the first) and runs the suites named for that bug. A mutation is

  caught     some named suite fails;
  SURVIVED   every named suite passes: a bug the tests do not see;
  no-build   the mutated tree does not compile (the mutation is wrong, not the tests);
  not-found  the text to change is not in the file (the code moved: update the list).

Before the mutations the unmutated scratch tree is built and the same suites run once: they must
pass, or the run stops. Prints one line per mutation and a summary; --markdown FILE writes the
table (docs/MUTATIONS.md). Exit status: 0 when every applied mutation was caught, 1 otherwise.

  scripts/check/mutate.py                    # all of them (a first run builds the scratch tree: minutes)
  scripts/check/mutate.py --only verify_raw_ignored staging_ring_doubled
  scripts/check/mutate.py --list
  scripts/check/mutate.py --check            # each mutation's text is still there (the mutations test)
  scripts/check/mutate.py --quick            # the subset CI runs
  scripts/check/mutate.py --seed-build build # first run: start from this checkout's built folder
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# name, what the bug is, file, the exact text to change (must occur once), its replacement, suites.
MUTATIONS = [
    # verify
    ("verify_raw_ignored", "verify() ignores a mismatch in a raw tensor",
     "lib/loading/verify.cpp",
     "if (std::memcmp(expected.data(), got.data(), n) != 0) mismatch(t, tensor_offset, expected, got);",
     "if (false && std::memcmp(expected.data(), got.data(), n) != 0) mismatch(t, tensor_offset, expected, got);",
     ["load"]),
    ("verify_decoded_ignored", "verify() ignores a mismatch in a decoded (non-raw) tensor",
     "lib/loading/verify.cpp",
     "if (std::memcmp(expected_chunk.data(), got.data(), n) != 0) mismatch(t, done, expected_chunk, got);",
     "if (false && std::memcmp(expected_chunk.data(), got.data(), n) != 0) mismatch(t, done, expected_chunk, got);",
     ["load"]),
    ("file_identity_unchecked", "verify() skips the file identity check (a rewritten file 'verifies')",
     "lib/loading/verify.cpp",
     "      loading::fail_if_changed(manifest.files.at(index)",
     "      if (false) loading::fail_if_changed(manifest.files.at(index)",
     ["load", "faults"]),
    # staging
    ("staging_ring_doubled", "the staging ring gets twice its slots",
     "lib/loading/pipeline.cpp",
     "ring_ = io::StagingRing(device_, plan.staging_slots, plan.slot_bytes);",
     "ring_ = io::StagingRing(device_, plan.staging_slots * 2, plan.slot_bytes);",
     ["load"]),
    ("staging_budget_ignored", "slots are sized by the model, not capped by the staging budget",
     "lib/plan/planner.cpp",
     "shape.slot_bytes = std::min(per_slot, std::max(needed, kSlotAlignment));",
     "shape.slot_bytes = std::max(needed, kSlotAlignment); (void)per_slot;",
     ["load", "plan"]),
    # region and page geometry
    ("region_size_multiple", "a region's length is not rounded up to the device's size multiple",
     "lib/plan/planner.cpp",
     "region.length = align_up(region.used, caps.size_multiple);",
     "region.length = region.used;",
     ["plan", "load"]),
    ("map_offset_unaligned", "a region's mapping starts at the region, not at its page",
     "lib/plan/planner.cpp",
     "region.map_offset = align_down(region.offset, page);",
     "region.map_offset = region.offset;",
     ["plan", "load"]),
    ("map_length_short", "a region's mapping stops at its used bytes, not at the page end",
     "lib/plan/planner.cpp",
     "region.map_length = align_up(region.offset + region.used, page) - region.map_offset;",
     "region.map_length = region.offset + region.used - region.map_offset;",
     ["plan", "load"]),
    # header bounds and tiling
    ("safetensors_header_bound", "safetensors header length bound `> size - 8` loosened to `> size`",
     "lib/formats/safetensors/safetensors.cpp",
     "  if (header_len > size - 8)\n",
     "  if (header_len > size)\n",
     ["safetensors"]),
    ("safetensors_hole", "a hole between safetensors tensors is accepted",
     "lib/formats/safetensors/safetensors.cpp",
     "    if (begin > expected)\n",
     "    if (false && begin > expected)\n",
     ["safetensors"]),
    ("safetensors_data_start", "safetensors offsets counted from the header, not from the data start",
     "lib/formats/safetensors/safetensors_header.cpp",
     "{Piece{file_index_, data_start_ + begin, end - begin}}",
     "{Piece{file_index_, 8 + begin, end - begin}}",
     ["safetensors"]),
    ("tensor_length_unchecked", "dtype x shape is not compared with the stored byte length",
     "lib/formats/format.cpp",
     "  if (expected != length)\n",
     "  if (false && expected != length)\n",
     ["safetensors", "gguf"]),
    ("tensor_cap_off_by_one", "the tensor-count cap admits one tensor too many",
     "lib/formats/format.hpp",
     "if (tensors_ >= limits_.max_tensors) too_many(file, field, name);",
     "if (tensors_ > limits_.max_tensors) too_many(file, field, name);",
     ["hostile", "safetensors"]),
    ("gguf_alignment_unchecked", "a GGUF tensor offset off the alignment is accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (raw.rel_offset % alignment_ != 0)",
     "if (false && raw.rel_offset % alignment_ != 0)",
     ["gguf"]),
    ("gguf_alignment_key_ignored", "general.alignment is read but the default 32 kept",
     "lib/formats/gguf/gguf.cpp",
     "    alignment_ = alignment;\n",
     "    (void)alignment;\n",
     ["gguf"]),
    # pickle
    ("stack_global_bypass", "STACK_GLOBAL bypasses the pickle allowlist",
     "lib/formats/pytorch/pickle_reader.cpp",
     "push(global(module->text, name->text));",
     "{ Value g = make(Node::Kind::global); g->text = module->text + \".\" + name->text; push(std::move(g)); }",
     ["pickle_protocols", "pytorch"]),
    ("pickle_allowlist_open", "the pickle allowlist accepts every global",
     "lib/formats/pytorch/pickle_reader.cpp",
     "if (!options_.allow_global || !options_.allow_global(full))",
     "if (false)",
     ["pickle_protocols", "pytorch"]),
    ("zip_local_extra", "a ZIP record's data offset ignores the local header's extra field",
     "lib/formats/pytorch/zip_archive.cpp",
     "record.data_offset = local + kLocalBytes + local_name + local_extra;",
     "record.data_offset = local + kLocalBytes + local_name; (void)local_extra;",
     ["pytorch", "pickle_protocols"]),
    # containment
    ("containment_open", "a link out of the model folder is followed",
     "lib/io/contained_file_system.cpp",
     "allow_outside_links_(allow_outside_links)",
     "allow_outside_links_(allow_outside_links || true)",
     ["hostile", "safetensors", "tfjs"]),
    # JSON
    ("json_number_split", "the digits of a JSON number before a read-chunk boundary are dropped",
     "lib/formats/json/json_file.cpp",
     "bool on_number_part(string_view s, error_code&) { return number.append(s.data(), s.size()), true; }",
     "bool on_number_part(string_view s, error_code&) { return (void)s, true; }",
     ["json_stream", "tfjs"]),
    ("json_key_split", "a safetensors tensor name split across read chunks keeps only its last part",
     "lib/formats/safetensors/safetensors_header.cpp",
     "      key_.append(s);\n",
     "      key_.assign(s);\n",
     ["json_stream", "safetensors"]),
    # TFLite
    ("tflite_buffer_fields_swapped", "TFLite Buffer.offset and Buffer.size read from each other's field ids",
     "lib/formats/tflite/tflite_schema.fbs",
     "  offset:ulong;\n  size:ulong;\n",
     "  size:ulong;\n  offset:ulong;\n",
     ["tflite"]),
    ("tflite_tensor_fields_swapped", "TFLite Tensor.buffer and Tensor.external_buffer read from each other's field ids",
     "lib/formats/tflite/tflite_schema.fbs",
     '  buffer:uint;             // index into Model.buffers; 0 is the empty sentinel\n  name:string;\n  quantization:QuantizationParameters;\n  is_variable:bool = false;\n  sparsity:SparsityParameters;\n  shape_signature:[int] (deprecated);\n  has_rank:bool (deprecated);\n  variant_tensors:[uint] (deprecated);\n  external_buffer:uint;    // schema 3d: ExternalBuffer.id (not an index); 0 = none\n',
     '  external_buffer:uint;    // schema 3d: ExternalBuffer.id (not an index); 0 = none\n  name:string;\n  quantization:QuantizationParameters;\n  is_variable:bool = false;\n  sparsity:SparsityParameters;\n  shape_signature:[int] (deprecated);\n  has_rank:bool (deprecated);\n  variant_tensors:[uint] (deprecated);\n  buffer:uint;             // index into Model.buffers; 0 is the empty sentinel\n',
     ["tflite"]),
    # ONNX
    ("onnx_int16_as_uint16", "ONNX data type 5 (INT16) decoded as UINT16",
     "lib/formats/onnx/onnx.cpp",
     "    case 5: return DType::I16;\n",
     "    case 5: return DType::U16;\n",
     ["onnx"]),
    ("onnx_varint_width", "ONNX typed-field elements written one byte short",
     "lib/formats/decode/onnx_decode.cpp",
     "std::memcpy(out_.data() + written_, &value, width_);",
     "std::memcpy(out_.data() + written_, &value, width_ > 1 ? width_ - 1 : width_);",
     ["onnx"]),
    # XRT (suite xrt: the simulated driver's device memory is filled only by syncs and copies)
    ("xrt_import_unsynced", "an XRT user-pointer import is not synced to the device",
     "backends/xrt/buffers.cpp",
     "       [&] { bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, range.size(), 0); });",
     "       [&] {});",
     ["xrt"]),
    ("xrt_refusal_fails", "a user pointer XRT refuses fails the load instead of being declined (re-planned direct)",
     "backends/xrt/buffers.cpp",
     '    return ImportResult::decline(str("xrt::bo(user pointer) refused ", what, ": ", what_of(e)));',
     "    throw;",
     ["xrt"]),
    ("onnx_external_to_end", "ONNX external data without a length takes the tensor's first bytes of a longer file",
     "lib/formats/onnx/onnx.cpp",
     "if (to_end && size - data_offset != info.bytes)",
     "if (false && to_end && size - data_offset != info.bytes)",
     ["onnx"]),
    ("onnx_external_key_twice", "an ONNX external_data offset or length given twice: the last one wins",
     "lib/formats/onnx/onnx.cpp",
     "if (out) fail_tensor(ErrorCode::bad_input, t, \"external_data\", t.external_offset, \"key '\", key, \"' appears twice\");",
     "if (false && out) fail_tensor(ErrorCode::bad_input, t, \"external_data\", t.external_offset, \"key '\", key, \"' appears twice\");",
     ["onnx"]),
    # GGUF: what ggml's own reader refuses
    ("gguf_name_64_accepted", "a 64-byte GGUF tensor name (ggml keeps 63 and refuses it) is accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (name_length >= kGgmlMaxName) {",
     "if (name_length > kGgmlMaxName) {",
     ["gguf"]),
    ("gguf_name_nul_accepted", "a GGUF tensor name holding a NUL (ggml reads its prefix) is accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (const auto nul = tensor.name.find('\\0'); nul != std::string::npos)",
     "if (const auto nul = tensor.name.find('\\0'); false && nul != std::string::npos)",
     ["gguf"]),
    ("gguf_packing_unchecked", "GGUF tensors out of info order, with gaps or overlapping (ggml refuses) are accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (raw.rel_offset != expected)",
     "if (false && raw.rel_offset != expected)",
     ["gguf"]),
    ("gguf_alignment_any_unsigned", "general.alignment of another unsigned type than UINT32 is accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (type != kU32)",
     "if (type != kU32 && type != kU8 && type != kU16 && type != kU64)",
     ["gguf"]),
    ("gguf_int64_count_unchecked", "a GGUF shape of 2^63 elements (past ggml's int64_t) is accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (!ggml_counts(tensor.shape))",
     "if (false && !ggml_counts(tensor.shape))",
     ["gguf"]),
    ("gguf_dims_cap", "a GGUF tensor of 5 dimensions (GGML_MAX_DIMS is 4) is accepted",
     "lib/formats/gguf/gguf.cpp",
     "  if (n_dims > kMaxDims)\n",
     "  if (n_dims > kMaxDims + 1)\n",
     ["gguf"]),
    ("gguf_block_rows", "a GGUF row (ne0) that is not a whole number of blocks is accepted when the count is",
     "lib/formats/gguf/gguf.cpp",
     "if (layout && layout->block_elems > 1 && static_cast<std::uint64_t>(ne0) % layout->block_elems != 0)",
     "if (false && layout && layout->block_elems > 1 && static_cast<std::uint64_t>(ne0) % layout->block_elems != 0)",
     ["gguf"]),
    ("gguf_duplicate_names", "two GGUF tensors of one name are accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (const TensorInfo* twice = find_duplicate_name(manifest_.tensors)) {",
     "if (const TensorInfo* twice = find_duplicate_name(manifest_.tensors); false && twice) {",
     ["gguf"]),
    ("onnx_external_location_twice", "an ONNX external_data location given twice: the last one wins",
     "lib/formats/onnx/onnx.cpp",
     "if (location) fail_tensor(ErrorCode::bad_input, t, \"external_data\", t.external_offset, \"key 'location' appears twice\");",
     "if (false && location) fail_tensor(ErrorCode::bad_input, t, \"external_data\", t.external_offset, \"key 'location' appears twice\");",
     ["onnx"]),
    ("dtype_q1_0_block", "Q1_0 blocks taken as 64 elements in 18 bytes (ggml's are 128 in 18)",
     "lib/core/dtype.cpp",
     "DTypeRow{DType::Q1_0, \"Q1_0\", {128, 18, false}}",
     "DTypeRow{DType::Q1_0, \"Q1_0\", {64, 18, false}}",
     ["gguf", "core"]),
    ("dtype_nvfp4_block", "NVFP4 blocks taken as 32 elements in 18 bytes (ggml's are 64 in 36)",
     "lib/core/dtype.cpp",
     "DTypeRow{DType::NVFP4, \"NVFP4\", {64, 36, false}}",
     "DTypeRow{DType::NVFP4, \"NVFP4\", {32, 18, false}}",
     ["gguf", "core"]),
    # TFJS, TFLite, PyTorch
    ("tfjs_walk_budget_per_weight", "each TFJS string weight's walk gets the whole budget (shards listed again read again)",
     "lib/formats/tfjs/tfjs.cpp",
     "  budget.walked += pos - begin;\n",
     "  (void)budget.walked;\n",
     ["tfjs"]),
    ("tflite_vector_length_ignored", "a TFLite vector's elements are not checked against the unread payloads, only its length word",
     "lib/formats/tflite/tflite_tables.cpp",
     "if (v) cover(v, sizeof(flatbuffers::uoffset_t) + std::uint64_t{v->size()} * sizeof(T), what);",
     "if (v) cover(v, sizeof(flatbuffers::uoffset_t), what);",
     ["tflite"]),
    ("legacy_storage_larger", "a legacy torch.save storage counting more elements than its persistent id is accepted",
     "lib/formats/pytorch/pytorch.cpp",
     "if (numel != storage.bytes / elem)",
     "if (numel < storage.bytes / elem)",
     ["pytorch"]),
    # limits read from the system, and their fallbacks
    ("cgroup_v1_mount_root", "a cgroup v1 mount's root is not cut off the process's cgroup path",
     "lib/core/machine.cpp",
     "if (mount.root != \"/\" && path.compare(0, mount.root.size(), mount.root) == 0) path.erase(0, mount.root.size());",
     "if (false && mount.root != \"/\" && path.compare(0, mount.root.size(), mount.root) == 0) path.erase(0, mount.root.size());",
     ["memory"]),
    ("rlimit_as_hard_limit", "RLIMIT_AS is taken as set only when its hard limit is",
     "lib/core/machine.cpp",
     "if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)",
     "if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_max != RLIM_INFINITY)",
     ["memory"]),
    ("openat2_eperm_no_fallback", "openat2 refused with EPERM (older seccomp profiles) is not answered by the component walk",
     "lib/io/posix_file_system.cpp",
     "if (fd != -ENOSYS && fd != -EPERM) return fd;",
     "if (fd != -ENOSYS) return fd;",
     ["faults_refusing_openat2_eperm"]),
    ("page_cache_seam_pages", "cachestat's page count multiplied by lwload's page size, not the kernel's",
     "lib/io/page_cache.cpp",
     "return std::min(length, pages * system_page_size());  // both count the kernel's pages",
     "return std::min(length, pages * page_size());",
     ["load_parts_page_16k"]),
    # C API statuses
    ("capi_out_of_memory_as_device", "the C API reports an allocation failure as LWLOAD_DEVICE",
     "lib/capi/capi_error.cpp",
     "case ErrorCode::out_of_memory: return LWLOAD_OUT_OF_MEMORY;",
     "case ErrorCode::out_of_memory: return LWLOAD_DEVICE;",
     ["load_parts"]),
    ("capi_does_not_fit_as_device", "the C API reports a plan that does not fit as LWLOAD_DEVICE",
     "lib/capi/capi_error.cpp",
     "case ErrorCode::does_not_fit: return LWLOAD_DOES_NOT_FIT;",
     "case ErrorCode::does_not_fit: return LWLOAD_DEVICE;",
     ["load_parts"]),
    ("capi_device_as_io", "the C API reports a failed transfer as LWLOAD_IO",
     "lib/capi/capi_error.cpp",
     "case ErrorCode::device: return LWLOAD_DEVICE;",
     "case ErrorCode::device: return LWLOAD_IO;",
     ["load_parts"]),
    # Chosen by a reviewer from the code alone, before reading the tests they probe.
    # limits read from the system
    ("cgroup_loosest_limit_wins", "of two cgroup memory limits on the walk, the loosest is kept, not the tightest",
     "lib/core/machine.cpp",
     "if (m.cgroup_limit != 0 && candidate.cgroup_headroom() >= m.cgroup_headroom()) return;",
     "if (m.cgroup_limit != 0 && candidate.cgroup_headroom() <= m.cgroup_headroom()) return;",
     ["memory"]),
    ("host_capacity_loosest", "the host device's memory is bounded by RLIMIT_AS only when that is looser than the host's",
     "backends/host/capacity.cpp",
     "(least.bytes == 0 || address_space < least.bytes)",
     "(least.bytes == 0 || address_space > least.bytes)",
     ["memory", "load_parts"]),
    ("device_free_memory_ignored", "the plan checks the device's total memory, not what its driver says is free",
     "lib/plan/planner.cpp",
     "const std::uint64_t has = free_known ? caps.memory_available : caps.device_memory;",
     "const std::uint64_t has = caps.device_memory;",
     ["plan"]),
    ("import_limit_per_region", "each region is held to the device's whole import limit, not to what earlier regions left",
     "lib/plan/planner.cpp",
     "      imported += length;\n",
     "      (void)imported;\n",
     ["plan"]),
    ("status_file_from_shmem", "the profile's sampler reads RssShmem as the file-backed resident bytes",
     "lib/profile/memory_sampler.cpp",
     "!field_kib(text, \"RssFile\", s.file)",
     "!field_kib(text, \"RssShmem\", s.file)",
     ["profile"]),
    ("ze_memory_last_region_only", "a Level Zero device's memory is its last memory region's size, not the sum",
     "backends/level_zero/discovery.cpp",
     "for (std::uint32_t i = 0; i < count && i < props.size(); ++i) total += props[i].totalSize;",
     "for (std::uint32_t i = 0; i < count && i < props.size(); ++i) total = props[i].totalSize;",
     ["level_zero"]),
    ("vk_import_limit_unset", "Vulkan imports on unified memory are not held to the heap's budget",
     "backends/vulkan/backend.cpp",
     "  if (unified && info.caps.import_host_ptr) info.caps.import_limit = info.caps.memory_available;\n",
     "",
     ["vulkan"]),
    ("opencl_base_align_bits_as_bytes", "CL_DEVICE_MEM_BASE_ADDR_ALIGN (bits) taken as bytes for sub-buffer alignment",
     "backends/opencl/discovery.cpp",
     "caps.sub_buffer_alignment = std::max<std::uint64_t>(1, base_align_bits / 8);",
     "caps.sub_buffer_alignment = std::max<std::uint64_t>(1, base_align_bits);",
     ["opencl"]),
    # fallbacks under each refusal code
    ("walk_dotdot_above_ignored", "without openat2, a '..' above the model folder is ignored instead of refused",
     "lib/io/posix_file_system.cpp",
     "      if (stack.empty()) return -EXDEV;\n",
     "      if (stack.empty()) continue;\n",
     ["containment", "faults_refusing_openat2"]),
    ("declined_fallback_swapped", "a declined region's tensors go staged where the device has host-visible memory, direct where not",
     "lib/plan/planner.cpp",
     "return device.caps.host_visible_alloc ? Placement::direct : Placement::staged;",
     "return device.caps.host_visible_alloc ? Placement::staged : Placement::direct;",
     ["plan", "load"]),
    ("direct_io_refusal_fails", "an O_DIRECT reopen the file system refuses fails the load instead of reading buffered",
     "lib/loading/pipeline.cpp",
     "      why = str(\"O_DIRECT open failed: \", e.what());\n",
     "      (void)e; throw;\n",
     ["load", "faults", "io_engines"]),
    ("cuda_register_oom_declined", "cuMemHostRegister's CUDA_ERROR_OUT_OF_MEMORY declines the import instead of failing",
     "backends/cuda/buffers.cpp",
     "  if (r == CUDA_ERROR_OUT_OF_MEMORY) check(r, \"cuMemHostRegister\", str(range.size(), \" bytes\"));\n",
     "",
     ["cuda"]),
    ("ze_unsupported_alignment_fails", "a Level Zero import refused with UNSUPPORTED_ALIGNMENT fails instead of being declined",
     "backends/level_zero/buffers.cpp",
     "         result == ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT || ",
     "         ",
     ["level_zero"]),
    ("xrt_direct_unsynced", "an XRT host-visible (direct) buffer is not synced to the device after the host writes it",
     "backends/xrt/buffers.cpp",
     "  call(session_->label(), \"xrt::bo::sync(XCL_BO_SYNC_BO_TO_DEVICE)\", str(size_, \" bytes\"),\n"
     "       [&] { bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE, static_cast<std::size_t>(size_), 0); });\n",
     "",
     ["xrt"]),
    ("load_identity_unchecked", "load() does not compare the files with what their headers were read from",
     "lib/loading/setup.cpp",
     "    if (state.files[f])\n",
     "    if (false && state.files[f])\n",
     ["faults", "load"]),
    # duplicate keys and fields per format
    ("gguf_kv_key_twice", "a GGUF metadata key given twice is accepted",
     "lib/formats/gguf/gguf.cpp",
     "if (!keys_.insert(key).second) in_.fail_at(key_offset, what, \"the key appears twice\");",
     "if (!keys_.insert(key).second && false) in_.fail_at(key_offset, what, \"the key appears twice\");",
     ["gguf"]),
    ("tfjs_duplicate_name", "two TFJS weights of one name are accepted",
     "lib/formats/tfjs/tfjs.cpp",
     "if (const TensorInfo* twice = find_duplicate_name(manifest.tensors)) {",
     "if (const TensorInfo* twice = find_duplicate_name(manifest.tensors); false && twice) {",
     ["tfjs"]),
    ("pytorch_name_twice", "two PyTorch state-dict entries of one name are accepted",
     "lib/formats/pytorch/pytorch.cpp",
     "if (!names_.insert(name).second) bad(what, \": the name appears twice\");",
     "if (!names_.insert(name).second && false) bad(what, \": the name appears twice\");",
     ["pytorch"]),
    ("onnx_initializer_name_twice", "two ONNX initializers of one name in one graph are accepted",
     "lib/formats/onnx/onnx.cpp",
     "if (indexed && initializer_names.contains(name, file_name))",
     "if (false && indexed && initializer_names.contains(name, file_name))",
     ["onnx"]),
    ("json_streamed_key_twice", "a streamed JSON member given twice in one object is accepted",
     "lib/formats/json/json_select.cpp",
     "if (streamed_in_holder) throw TwiceStreamed{};",
     "if (false && streamed_in_holder) throw TwiceStreamed{};",
     ["json_stream", "tfjs"]),
    ("ort_name_shared_handed_over", "an ONNX constant name two graphs share is handed to AddInitializer (keyed by name alone)",
     "adapters/onnxruntime/ort_session.cpp",
     "if (const std::size_t n = uses.at(c.name); n > 1)",
     "if (const std::size_t n = uses.at(c.name); n > 2)",
     ["onnxruntime"]),
    # C API statuses
    ("capi_callback_cancel_as_usage", "an on_tensor_ready callback's non-zero return is reported as LWLOAD_USAGE, not LWLOAD_CANCELLED",
     "lib/capi/capi_load.cpp",
     "lwload::fail(lwload::ErrorCode::cancelled, \"load cancelled: the on_tensor_ready callback",
     "lwload::fail(lwload::ErrorCode::usage, \"load cancelled: the on_tensor_ready callback",
     ["load_parts", "capi"]),
    ("capi_system_error_as_device", "the C API reports a std::system_error (a file system error) as LWLOAD_DEVICE",
     "lib/capi/capi_error.cpp",
     "    status = LWLOAD_IO;\n",
     "    status = LWLOAD_DEVICE;\n",
     ["load_parts", "capi"]),
    ("capi_not_found_as_usage", "the C API reports a name lookup miss as LWLOAD_USAGE, not LWLOAD_NOT_FOUND",
     "lib/capi/capi_error.cpp",
     "    status = LWLOAD_NOT_FOUND;\n",
     "    status = LWLOAD_USAGE;\n",
     ["load_parts", "capi"]),
    ("cli_io_exit_as_bad_input", "the CLI exits with the bad-input code for an I/O error",
     "tools/lwload/cli.cpp",
     "case ErrorCode::io: return exit_io;",
     "case ErrorCode::io: return exit_bad_input;",
     ["cli"]),
    # output encoding
    ("json_backslash_unescaped", "a backslash in a name is written into JSON unescaped",
     "lib/core/json_text.hpp",
     "text[plain] != '\"' && text[plain] != '\\\\')",
     "text[plain] != '\"')",
     ["core", "cli"]),
    ("svg_ampersand_unescaped", "an '&' in a name is written into the SVG report unescaped",
     "lib/profile/svg_text.hpp",
     "      case '&': out += \"&amp;\"; break;\n",
     "      case '&': out += '&'; break;\n",
     ["profile"]),
    ("cli_c1_unescaped", "the CLI prints C1 control characters (U+0080..U+009F, e.g. CSI) of a name raw",
     "tools/lwload/cli.cpp",
     "} else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {",
     "} else if (false && c == 0xc2 && next >= 0x80 && next <= 0x9f) {",
     ["cli"]),
    ("contract_staged_on_unified", "the memory contract of a unified device that staged tensors uses the unified rule",
     "lib/profile/contract.cpp",
     "const bool discrete_rule = in.memory == MemoryModel::discrete || in.staged_bytes > 0;",
     "const bool discrete_rule = in.memory == MemoryModel::discrete;",
     ["profile"]),
    # every dtype through each adapter
    ("ggml_i16_as_i32", "the ggml adapter maps I16 to GGML_TYPE_I32",
     "adapters/ggml/ggml_model.cpp",
     "{DType::I16, GGML_TYPE_I16}",
     "{DType::I16, GGML_TYPE_I32}",
     ["ggml_adapter", "ggml_c"]),
    ("ggml_ne_not_reversed", "the ggml adapter takes a row-major format's shape as ggml's ne without reversing it",
     "adapters/ggml/ggml_model.cpp",
     "ne[i] = format == \"gguf\" ? tensor.shape[i] : tensor.shape[rank - 1 - i];",
     "ne[i] = format == \"gguf\" ? tensor.shape[i] : tensor.shape[i];",
     ["ggml_adapter", "ggml_c"]),
    ("ort_int16_as_uint16", "the ONNX Runtime adapter hands an INT16 constant over as UINT16",
     "adapters/onnxruntime/ort_session.cpp",
     "case DType::I16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;",
     "case DType::I16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;",
     ["onnxruntime"]),
]

# The subset CI runs (one per area, the fastest suites).
QUICK = ["verify_raw_ignored", "staging_ring_doubled", "safetensors_header_bound", "json_number_split",
         "stack_global_bypass", "region_size_multiple"]



def occurrences(text, find):
    """Where `find` occurs in `text`, whitespace aside: the formatter (.clang-format) may re-wrap or
    re-space a line without changing its tokens, and a mutation should still find its text."""
    pattern = r"\s*".join(re.escape(c) for c in find if not c.isspace())
    return [m.span() for m in re.finditer(pattern, text)]


def apply_once(text, find, replace):
    """`text` with the one occurrence of `find` (whitespace aside) replaced, or None."""
    spans = occurrences(text, find)
    if len(spans) != 1:
        return None
    start, end = spans[0]
    return text[:start] + replace + text[end:]

def run(cmd, cwd=None, env=None, log=None):
    result = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log is not None:
        log.write(f"$ {' '.join(cmd)}\n{result.stdout}\n")
        log.flush()
    return result


def sync_tree(scratch):
    """Copies this checkout's files (tracked and untracked, not ignored) into scratch/src, writing
    only those whose content differs, so unchanged files keep their times and builds stay incremental."""
    src = scratch / "src"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, stdout=subprocess.PIPE).stdout.split(b"\0")
    for name in filter(None, files):
        rel = Path(os.fsdecode(name))
        origin, copy = ROOT / rel, src / rel
        if not origin.is_file():
            continue
        data = origin.read_bytes()
        if copy.is_file() and copy.read_bytes() == data:
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, copy)  # with its time: a seeded build sees what it was built from as unchanged
    return src


def seed_build(seed, build, src):
    """Copies an existing, built build folder of this checkout to `build` (times kept) and points its
    build.ninja at the scratch sources, so the first run recompiles only what differs."""
    shutil.copytree(seed, build, symlinks=True)
    ninja_file = build / "build.ninja"
    text = ninja_file.read_text()
    ninja_file.write_text(text.replace(str(ROOT), str(src)))
    tests_file = build / "meson-info" / "intro-tests.json"
    tests_file.write_text(tests_file.read_text().replace(str(ROOT), str(src)))


def targets_for(suites):
    """The executables a suite runs: tests/test_<suite>, the suite it repeats for the variants
    tests/meson.build defines (<suite>_page_<N>k, <suite>_refusing_<what> under tests/refuse), and the CLI."""
    targets = {"tools/lwload/lwload"}
    for suite in suites:
        base = re.sub(r"_page_\d+k$", "", suite.split("_refusing_")[0])
        targets.add("tests/test_opencl" if base == "opencl_rusticl" else f"tests/test_{base}")
        if "_refusing_" in suite:
            targets.add("tests/refuse")
    return sorted(targets)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scratch", default=os.environ.get("LWLOAD_MUTATE_DIR", "/tmp/lwload-mutate"),
                        help="scratch folder (source copy and build; kept between runs)")
    parser.add_argument("--only", nargs="*", help="mutation names")
    parser.add_argument("--quick", action="store_true", help="the subset CI runs")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--check", action="store_true",
                        help="only check that each mutation's text occurs once in its file (no build; a test runs it)")
    parser.add_argument("-j", "--jobs", default="2")
    parser.add_argument("--markdown", help="write the result table to this file")
    parser.add_argument("--seed-build", help="a built build folder of this checkout (e.g. build) to copy as the "
                        "scratch build on a first run, instead of building from nothing")
    args = parser.parse_args()

    chosen = MUTATIONS
    if args.quick:
        chosen = [m for m in MUTATIONS if m[0] in QUICK]
    if args.only:
        unknown = set(args.only) - {m[0] for m in MUTATIONS}
        if unknown:
            sys.exit(f"mutate: unknown mutation(s): {', '.join(sorted(unknown))}")
        chosen = [m for m in MUTATIONS if m[0] in args.only]
    if args.check:
        stale = 0
        for name, _, path, old, _, _ in chosen:
            found = len(occurrences((ROOT / path).read_text(), old)) if (ROOT / path).is_file() else -1
            if found != 1:
                stale += 1
                print(f"mutate: {name}: its text occurs {max(found, 0)} times in {path}"
                      + (" (no such file)" if found < 0 else "") + ", not once: update MUTATIONS")
        print(f"mutate: {len(chosen) - stale} of {len(chosen)} mutations apply")
        return 1 if stale else 0
    if args.list:
        for name, what, path, _, _, suites in chosen:
            print(f"{name:30} {path:40} {','.join(suites):24} {what}")
        return 0

    scratch = Path(args.scratch).resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    log = open(scratch / "mutate.log", "w")
    src = sync_tree(scratch)
    seed = Path(args.seed_build).resolve() if args.seed_build else None
    # The scratch build folder: a seeded one keeps the seed's name (its relative paths), and later
    # runs find it again through scratch/build-folder.
    marker = scratch / "build-folder"
    if seed:
        build = src / seed.relative_to(ROOT)
        marker.write_text(str(seed.relative_to(ROOT)))
    else:
        build = src / (marker.read_text().strip() if marker.exists() else "build-mutate")
    env = dict(os.environ)
    env.setdefault("CCACHE_DIR", "/work/.ccache" if Path("/work/.ccache").is_dir() else str(scratch / "ccache"))
    env["CCACHE_BASEDIR"] = str(src)
    env["CCACHE_NOHASHDIR"] = "true"
    if seed and not (build / "build.ninja").exists():
        seed_build(seed, build, src)
    if not (build / "build.ninja").exists():
        r = run(["meson", "setup", str(build), "-Dexamples=false"], cwd=src, env=env, log=log)
        if r.returncode != 0:
            sys.exit(f"mutate: meson setup failed (see {scratch / 'mutate.log'})")

    all_suites = sorted({s for m in chosen for s in m[5]})
    targets = targets_for(all_suites)

    # The suites as meson defines them (command, environment), read from the build's introspection
    # file and run directly, one after another, each under half its meson timeout.
    defined = {t["name"]: t for t in json.loads((build / "meson-info" / "intro-tests.json").read_text())}

    def run_suite(name):
        t = defined[name]
        suite_env = dict(env, **t["env"])
        try:
            r = subprocess.run(t["cmd"], cwd=t["workdir"] or str(build), env=suite_env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=max(60, t["timeout"] // 2))
        except subprocess.TimeoutExpired:
            log.write(f"$ {' '.join(t['cmd'])}: timed out\n")
            return False
        log.write(f"$ {' '.join(t['cmd'])}\n{r.stdout[-20000:]}\nexit {r.returncode}\n")
        log.flush()
        return r.returncode == 0

    def build_and_test(suites):
        r = run(["ninja", "-C", str(build), f"-j{args.jobs}"] + targets_for(suites), env=env, log=log)
        if r.returncode != 0:
            return "no-build", 0.0
        start = time.monotonic()
        ok = True
        for suite in suites:
            ok = run_suite(suite) and ok
            if not ok:
                break  # caught: the other suites need not run
        return ("pass" if ok else "fail"), time.monotonic() - start

    print(f"mutate: building the unmutated tree in {build} and running {', '.join(all_suites)}", flush=True)
    r = run(["ninja", "-C", str(build), f"-j{args.jobs}"] + targets, env=env, log=log)
    if r.returncode != 0:
        sys.exit(f"mutate: the unmutated tree does not build (see {scratch / 'mutate.log'})")
    status, seconds = build_and_test(all_suites)
    if status != "pass":
        sys.exit(f"mutate: the unmutated tree fails its suites (see {scratch / 'mutate.log'})")
    print(f"mutate: baseline passes ({seconds:.0f} s)", flush=True)

    results = []
    for name, what, path, find, replace, suites in chosen:
        sync_tree(scratch)  # the checkout's latest tests (and code), for a run long enough to see edits
        file = src / path
        original = file.read_text()
        mutated = apply_once(original, find, replace)
        if mutated is None:
            results.append((name, what, path, suites, "not-found", 0.0))
        else:
            file.write_text(mutated)
            try:
                status, seconds = build_and_test(suites)
            finally:
                file.write_text(original)
            verdict = {"fail": "caught", "pass": "SURVIVED", "no-build": "no-build"}[status]
            results.append((name, what, path, suites, verdict, seconds))
        n, _, p, s, v, sec = results[-1]
        print(f"{v:9} {n:30} {p:38} {','.join(s):28} {sec:5.0f} s", flush=True)
    # Leave the scratch build matching the unmutated sources.
    run(["ninja", "-C", str(build), f"-j{args.jobs}"] + targets, env=env, log=log)

    caught = sum(1 for r in results if r[4] == "caught")
    applied = sum(1 for r in results if r[4] in ("caught", "SURVIVED"))
    print(f"mutate: {caught} of {applied} applied mutations caught; "
          f"{sum(1 for r in results if r[4] == 'SURVIVED')} survived, "
          f"{sum(1 for r in results if r[4] in ('no-build', 'not-found'))} not applied")
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write("| mutation | bug put in | file | suites run | result |\n|---|---|---|---|---|\n")
            for name, what, path, suites, verdict, _ in results:
                out.write(f"| `{name}` | {what} | {path} | {', '.join(suites)} | {verdict} |\n")
    return 0 if caught == applied and applied == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

// The loader's setup, before any byte of tensor data moves: take the files the plan reads, check
// they still hold every byte the plan needs and have not changed, make the handles the application
// will receive (zero_copy ones on their imported regions) and allocate a buffer per direct and
// staged tensor. Each step throws on failure; whatever was made is owned by Weights::State and
// released with it.
#pragma once

#include "loading/layer.hpp"

#include <filesystem>
#include <string_view>
#include <vector>

#include "loading/region_imports.hpp"
#include "loading/weights_state.hpp"
#include "lwload/file_system.hpp"

namespace lwload::loading {

// state.files and state.identities (now): per manifest file the file the plan reads (null when it
// reads nothing from it) — the one open_manifest kept (Manifest::opened); opened by path only for a
// manifest built by hand.
void open_files(Weights::State& state);

// The files may have changed since their headers were read: every byte the plan needs must still
// be there (a later truncation shows up as a short read or a failed population, named the same way).
void check_extents(const Weights::State& state);

// Error(io) when `now` is not the identity `then` the file had: "<file>: changed since <since>
// (size A → B, modified); <consequence>" (the size, then the modification or status-change time,
// so the message says what moved).
void fail_if_changed(const std::filesystem::path& file, const FileIdentity& then, const FileIdentity& now,
                     std::string_view since, std::string_view consequence);

// A file rewritten in place since open_manifest read its headers (another size or modification
// time) is Error(io): its headers no longer describe its bytes. After check_extents, which names
// the first tensor a truncation cut.
void check_unchanged(const Weights::State& state);

// state.handles (and state.by_name), one per tensor; a zero_copy tensor gets its region's buffer,
// or its own view where the backend can make one there (an OpenCL sub-buffer).
void make_handles(Weights::State& state, const std::vector<ImportedRegion>& regions);

// One allocation per direct (host-visible) and staged (device-local) tensor, into its handle.
void allocate_buffers(Weights::State& state, Device& device);

}  // namespace lwload::loading

// The loader's setup, before any byte of tensor data moves: open the files the plan reads, check
// they still hold every byte the plan needs, allocate a buffer per direct and staged tensor, and
// make the handles the application will receive. Each step throws on failure; whatever was made is
// owned by Weights::State and released with it.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

#include "load/weights_state.hpp"

namespace lwload::loading {

inline constexpr std::size_t kNoBuffer = std::numeric_limits<std::size_t>::max();

// state.files and state.identities (now): per manifest file the file the plan reads (null when it
// reads nothing from it) — the one open_manifest kept (Manifest::opened); opened by path only for a
// manifest built by hand.
void open_files(Weights::State& state);

// The files may have changed since their headers were read: every byte the plan needs must still
// be there (a later truncation shows up as a short read or a failed population, named the same way).
void check_extents(const Weights::State& state, const OpenFiles& files);

// A file rewritten in place since open_manifest read its headers (another size or modification
// time) is Error(io): its headers no longer describe its bytes. After check_extents, which names
// the first tensor a truncation cut.
void check_unchanged(const Weights::State& state);

// One allocation per direct (host-visible) and staged (device-local) tensor; tensor_buffer[entry]
// becomes its index into state.buffers.
void allocate_buffers(Weights::State& state, Device& device, std::vector<std::size_t>& tensor_buffer);

// state.handles (and state.by_name) for every entry; a zero_copy tensor inside a region gets its
// own view where the backend can make one there (an OpenCL sub-buffer).
void make_handles(Weights::State& state, const std::vector<std::size_t>& tensor_buffer);

}  // namespace lwload::loading

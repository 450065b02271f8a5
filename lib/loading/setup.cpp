#include "loading/setup.hpp"

#include "lwload/error.hpp"

namespace lwload::loading {

void open_files(Weights::State& state) {
  const Manifest& manifest = state.manifest;
  OpenFiles& files = state.files;
  files.assign(manifest.files.size(), nullptr);
  state.identities.assign(manifest.files.size(), FileIdentity{});
  if (!manifest.opened.empty() && manifest.opened.size() != manifest.files.size())
    fail(ErrorCode::usage, "manifest: ", manifest.opened.size(), " opened files for ", manifest.files.size(), " files");
  for (std::size_t i = 0; i < state.plan.tensors.size(); ++i) {
    if (state.plan.tensors[i].placement == Placement::skipped) continue;
    const TensorInfo& t = manifest.tensors[i];
    for (const Piece& piece : t.pieces) {
      if (piece.file >= manifest.files.size())
        fail(ErrorCode::bad_input, "tensor '", t.name, "': piece names file ", piece.file, " of ",
             manifest.files.size());
      if (files[piece.file]) continue;
      if (!manifest.opened.empty() && manifest.opened[piece.file].file)
        files[piece.file] = manifest.opened[piece.file].file;
      else files[piece.file] = state.file_system->open(manifest.files[piece.file]);
      state.identities[piece.file] = files[piece.file]->identity();
    }
  }
}

void check_extents(const Weights::State& state) {
  for (std::size_t i = 0; i < state.plan.tensors.size(); ++i) {
    if (state.plan.tensors[i].placement == Placement::skipped) continue;
    const TensorInfo& t = state.manifest.tensors[i];
    for (const Piece& piece : t.pieces) {
      const std::uint64_t size = state.identities[piece.file].size;
      if (piece.offset > size || piece.length > size - piece.offset)
        fail(ErrorCode::bad_input, state.files[piece.file]->path().string(), ": tensor '", t.name, "' needs bytes [",
             piece.offset, ", ", piece.offset + piece.length, ") but the file now has ", size,
             " bytes (truncated or replaced since its headers were read)");
    }
  }
}

void fail_if_changed(const std::filesystem::path& file, const FileIdentity& then, const FileIdentity& now,
                     std::string_view since, std::string_view consequence) {
  if (now == then) return;
  fail(ErrorCode::io, file.string(), ": changed since ", since, " (size ", then.size, " → ", now.size,
       now.modified_ns != then.modified_ns ? ", modified"
       : now.changed_ns != then.changed_ns
           ? ", status changed (ctime): rewritten in place, or its links or mode changed"
           : "",
       "); ", consequence);
}

void check_unchanged(const Weights::State& state) {
  const Manifest& manifest = state.manifest;
  if (manifest.opened.empty()) return;
  for (std::size_t f = 0; f < state.files.size(); ++f)
    if (state.files[f])
      fail_if_changed(manifest.files[f], manifest.opened[f].identity, state.identities[f], "its headers were read",
                      "open the model again");
}

namespace {

void attach(TensorHandle& h, DeviceBuffer* buffer) {
  h.buffer = buffer;
  h.native = buffer->native();
  h.mechanism = buffer->mechanism();
}

}  // namespace

void make_handles(Weights::State& state, const std::vector<ImportedRegion>& regions) {
  const Plan& plan = state.plan;
  state.handles.resize(plan.tensors.size());
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    TensorHandle& h = state.handles[i];
    h.index = i;
    h.info = &state.manifest.tensors[i];
    h.placement = tp.placement;
    h.bytes = h.info->bytes;
    if (tp.placement != Placement::zero_copy) continue;
    DeviceBuffer* region = regions.at(tp.region).buffer;
    h.offset = tp.region_offset;
    if (h.offset != 0) {
      if (auto view = region->view(h.offset, h.bytes)) {
        region = view.get();
        h.offset = 0;
        h.view = true;
        state.views.push_back(std::move(view));
      }
    }
    attach(h, region);
  }
  state.by_name.build(state.handles.size(),
                      [&](std::size_t i) -> std::string_view { return state.handles[i].info->name; });
}

void allocate_buffers(Weights::State& state, Device& device) {
  const Plan& plan = state.plan;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const Placement p = plan.tensors[i].placement;
    if (p != Placement::direct && p != Placement::staged) continue;
    const TensorInfo& t = state.manifest.tensors[i];
    auto buffer =
        device.allocate(t.bytes, p == Placement::direct ? MemoryPlace::host_visible : MemoryPlace::device_local);
    if (!buffer)
      fail(ErrorCode::device, "device ", device.info().id(), " returned no buffer for tensor '", t.name, "'");
    attach(state.handles[i], buffer.get());
    state.buffers.push_back(std::move(buffer));
  }
}

}  // namespace lwload::loading

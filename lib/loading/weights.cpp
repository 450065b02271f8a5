// Weights: lookups into a finished load, and read-back for verification.
#include "loading/weights_state.hpp"

#include "lwload/error.hpp"

namespace lwload {

Weights::Weights(std::unique_ptr<State> state) : state_(std::move(state)) {}
Weights::Weights(Weights&&) noexcept = default;
Weights& Weights::operator=(Weights&&) noexcept = default;
Weights::~Weights() = default;

const TensorHandle* Weights::find(std::string_view name) const noexcept {
  const auto& handles = state_->handles;
  const std::size_t at =
      state_->by_name.find(name, [&](std::size_t e) -> std::string_view { return handles[e].info->name; });
  return at == loading::NameIndex::npos ? nullptr : &handles[at];
}

std::span<const TensorHandle> Weights::tensors() const noexcept { return state_->handles; }
const Manifest& Weights::manifest() const noexcept { return state_->manifest; }
const Plan& Weights::plan() const noexcept { return state_->plan; }
const DeviceInfo& Weights::device() const noexcept { return state_->device; }
const IoReport& Weights::io() const noexcept { return state_->io; }
const std::vector<FileIdentity>& Weights::file_identities() const noexcept { return state_->identities; }
const LoadStats& Weights::stats() const noexcept { return state_->stats; }
const RandomAccessFile* Weights::file(std::size_t index) const noexcept {
  return index < state_->files.size() ? state_->files[index].get() : nullptr;
}

void Weights::read_back(const TensorHandle& tensor, std::uint64_t offset, std::span<std::byte> dst) const {
  const std::string& name = tensor.info ? tensor.info->name : std::string();
  if (!tensor.buffer)
    fail(ErrorCode::usage, "tensor '", name, "' was not loaded (", placement_name(tensor.placement), ")");
  if (offset > tensor.bytes || dst.size() > tensor.bytes - offset)
    fail(ErrorCode::usage, "tensor '", name, "': read-back of [", offset, ", +", dst.size(), ") is outside its ",
         tensor.bytes, " bytes");
  try {
    tensor.buffer->read_back(tensor.offset + offset, dst);
  } catch (const Error& e) {
    // The backend knows its buffer, not the model: a lost page (a file truncated under a
    // zero-copy import) is reported with the file and tensor it belongs to.
    std::string file;
    if (tensor.info && !tensor.info->pieces.empty())
      file = state_->manifest.files.at(tensor.info->pieces.front().file).string() + ": ";
    fail(e.code(), file, "tensor '", name, "': ", e.what());
  }
}

}  // namespace lwload

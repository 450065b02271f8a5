// Weights: lookups into a finished load, and read-back for verification.
#include "load/weights_state.hpp"

#include "lwload/error.hpp"

namespace lwload {

Weights::Weights(std::unique_ptr<State> state) : state_(std::move(state)) {}
Weights::Weights(Weights&&) noexcept = default;
Weights& Weights::operator=(Weights&&) noexcept = default;
Weights::~Weights() = default;

const TensorHandle* Weights::find(std::string_view name) const noexcept {
  const auto& handles = state_->handles;
  const std::size_t at = state_->by_name.find(name, [&](std::size_t e) -> std::string_view { return handles[e].info->name; });
  return at == loading::NameIndex::npos ? nullptr : &handles[at];
}

std::span<const TensorHandle> Weights::tensors() const noexcept { return state_->handles; }
const Manifest& Weights::manifest() const noexcept { return state_->manifest; }
const Plan& Weights::plan() const noexcept { return state_->plan; }
const DeviceInfo& Weights::device() const noexcept { return state_->device; }
const IoReport& Weights::io() const noexcept { return state_->io; }
const std::vector<FileIdentity>& Weights::file_identities() const noexcept { return state_->identities; }
const LoadStats& Weights::stats() const noexcept { return state_->stats; }
const std::shared_ptr<FileSystem>& Weights::file_system() const noexcept { return state_->file_system; }

void Weights::read_back(const TensorHandle& tensor, std::uint64_t offset, std::span<std::byte> dst) const {
  const std::string& name = tensor.info ? tensor.info->name : std::string();
  if (!tensor.buffer) fail(ErrorCode::usage, "tensor '", name, "' was not loaded (", placement_name(tensor.placement), ")");
  if (offset > tensor.bytes || dst.size() > tensor.bytes - offset)
    fail(ErrorCode::usage, "tensor '", name, "': read-back of [", offset, ", +", dst.size(), ") is outside its ",
         tensor.bytes, " bytes");
  tensor.buffer->read_back(tensor.offset + offset, dst);
}

}  // namespace lwload

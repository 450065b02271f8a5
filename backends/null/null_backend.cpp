// null backend: placeholder until the load engine lands.
#include "backends/builtin.hpp"

namespace lwload {
namespace {
class Placeholder final : public Backend {
 public:
  std::string_view name() const noexcept override { return "null"; }
  std::vector<DeviceInfo> devices() override { return {}; }
  std::unique_ptr<Device> open(std::uint32_t, const DeviceOverrides&) override { return nullptr; }
};
}  // namespace
std::shared_ptr<Backend> make_null_backend() { return std::make_shared<Placeholder>(); }
}  // namespace lwload

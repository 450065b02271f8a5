// A backend of exactly one device, NAME:0, described afresh on every listing (host, null).
#pragma once

#include "backends/layer.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {

class OneDeviceBackend final : public BackendImpl {
 public:
  using Describe = DeviceInfo (*)();
  using Open = std::unique_ptr<Device> (*)(DeviceInfo info);
  // `name` is a string literal: the backend keeps the view.
  OneDeviceBackend(std::string_view name, Describe describe, Open open)
      : name_(name), describe_(describe), open_(open) {}

  std::string_view name() const noexcept override { return name_; }
  std::vector<DeviceInfo> devices() override { return {describe_()}; }
  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    if (index != 0) fail(ErrorCode::usage, name_, " has one device (", name_, ":0)");
    return open_(apply_overrides(describe_(), overrides));
  }

 private:
  std::string_view name_;
  Describe describe_;
  Open open_;
};

}  // namespace lwload

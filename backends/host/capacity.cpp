#include "backends/host/capacity.hpp"

#include "lwload/machine.hpp"

namespace lwload::host {

HostCapacity host_capacity() {
  const MachineMemory machine = machine_memory();
  HostCapacity least{machine.host_available(), machine.host_bound_by()};
  const std::uint64_t address_space = machine.address_space_left();
  if (machine.address_space_limit != 0 && (least.bytes == 0 || address_space < least.bytes))
    least = {address_space == 0 ? 1 : address_space, "RLIMIT_AS"};
  return least;
}

}  // namespace lwload::host

// An app that profiles a load with liblwload-profile (lwload/profile.hpp): the profiler ships apart
// from liblwload.so, so this consumer links both. It also reads the machine's figures, whose
// methods liblwload.so must export (lwload/machine.hpp).
#include <lwload/lwload.hpp>
#include <lwload/machine.hpp>
#include <lwload/profile.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer_profile MODEL\n";
    return 2;
  }
  try {
    const lwload::MachineMemory machine = lwload::machine_memory();
    std::cout << "host memory available: " << machine.host_available() << " bytes (" << machine.host_bound_by()
              << ")\n";
    const lwload::Manifest manifest = lwload::open_manifest(argv[1]);
    auto device = lwload::open_device("host");
    const lwload::profile::Report report = lwload::profile::profile_load(manifest, *device);
    const std::string svg = lwload::profile::report_to_svg(report);
    std::cout << report.tensor_count << " tensors profiled; contract " << (report.contract.held ? "held" : "violated")
              << "; SVG of " << svg.size() << " bytes\n";
    return report.tensor_count == manifest.tensors.size() && svg.find("<svg") != std::string::npos ? 0 : 1;
  } catch (const lwload::Error& e) {
    std::cerr << "consumer_profile: " << e.what() << '\n';
    return 1;
  }
}

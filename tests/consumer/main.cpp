// The smallest lwload app: open a model's manifest, load it onto the default device, look up a
// tensor. Built by scripts/check-consumers.sh against the subproject and the installed library.
#include <lwload/lwload.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer MODEL\n";
    return 2;
  }
  try {
    const lwload::Manifest manifest = lwload::open_manifest(argv[1]);
    auto device = lwload::open_device("host");
    const lwload::Weights weights = lwload::load(manifest, *device);
    const lwload::TensorHandle* first = weights.find(manifest.tensors.front().name);
    std::cout << manifest.tensors.size() << " tensors loaded; " << first->info->name << " at offset "
              << first->offset << " via " << first->mechanism << '\n';
    return first->bytes == manifest.tensors.front().bytes ? 0 : 1;
  } catch (const lwload::Error& e) {
    std::cerr << "consumer: " << e.what() << '\n';
    return 1;
  }
}

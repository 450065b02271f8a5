// The smallest lwload app: open a model's manifest, load it onto the default device, look up a
// tensor. Built by scripts/check/consumers.sh against the subproject and the installed library.
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
    std::cout << manifest.tensors.size() << " tensors loaded; " << first->info->name << " at offset " << first->offset
              << " via " << first->mechanism << '\n';
    if (first->bytes != manifest.tensors.front().bytes) return 1;
    // The library's exceptions are catchable as lwload::Error here (its type info is exported).
    try {
      (void)lwload::open_manifest("/nonexistent/model.safetensors");
    } catch (const lwload::Error& e) {
      std::cout << "caught lwload::Error (" << lwload::error_code_name(e.code()) << ") from liblwload\n";
      return e.code() == lwload::ErrorCode::io ? 0 : 1;
    }
    return 1;
  } catch (const lwload::Error& e) {
    std::cerr << "consumer: " << e.what() << '\n';
    return 1;
  }
}

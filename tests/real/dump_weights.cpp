// Loads a model with lwload on a device and writes what the device holds, read back tensor by
// tensor, for the real-file tests to compare with an independent reader's dump:
//   dump_weights MODEL DEVICE OUTDIR [--densify]
// OUTDIR/index.json lists every tensor of the manifest in order ({name, dtype, shape, bytes, file,
// placement}); file (N.bin, the bytes read back from the device) is null for tensors the load
// skipped (STRING). Exit 0 when the load and every read-back succeeded.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "lwload/lwload.hpp"

int main(int argc, char** argv) {
  const bool densify = argc == 5 && std::string_view(argv[4]) == "--densify";
  if (argc != 4 && !densify) {
    std::cerr << "usage: dump_weights MODEL DEVICE OUTDIR [--densify]\n";
    return 2;
  }
  try {
    const std::filesystem::path out = argv[3];
    std::filesystem::create_directories(out);
    lwload::OpenOptions options;
    options.densify = densify;
    const lwload::Manifest manifest = lwload::open_manifest(argv[1], options);
    const auto device = lwload::open_device(argv[2]);
    const lwload::Weights weights = lwload::load(manifest, *device);
    boost::json::array index;
    std::vector<std::byte> bytes;
    for (const lwload::TensorHandle& t : weights.tensors()) {
      boost::json::array shape;
      for (std::int64_t d : t.info->shape) shape.emplace_back(d);
      boost::json::object entry{{"name", t.info->name},      {"dtype", lwload::dtype_name(t.info->dtype)},
                                {"shape", std::move(shape)}, {"placement", lwload::placement_name(t.placement)},
                                {"bytes", nullptr},          {"file", nullptr}};
      if (t.placement != lwload::Placement::skipped) {
        bytes.resize(t.bytes);
        weights.read_back(t, 0, bytes);
        const std::string file = std::to_string(index.size()) + ".bin";
        std::ofstream(out / file, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        entry["bytes"] = t.bytes;
        entry["file"] = file;
      }
      index.emplace_back(std::move(entry));
    }
    std::ofstream(out / "index.json") << boost::json::serialize(index);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dump_weights: " << e.what() << '\n';
    return 1;
  }
}

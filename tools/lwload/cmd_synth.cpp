// lwload synth: writes a synthetic safetensors or GGUF model whose contents are a pure function of
// the seed, so `lwload load --verify` (and the tests) can check every byte that lands on a device.
#include <boost/json.hpp>
#include <iostream>

#include "cli.hpp"
#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "synth/synth.hpp"

namespace lwload::cli {

int cmd_synth(int argc, char** argv) {
  Args args("synth", "Write a synthetic model with deterministic, verifiable contents.", {"OUT"},
            {{"--format", "F", "safetensors or gguf", "safetensors"},
             {"--size", "BYTES", "total tensor bytes (rounded to whole tensors)", "256MiB"},
             {"--tensors", "N", "tensor count", "8"},
             {"--alignment", "A",
              "tensor data alignment; safetensors: 0 = packed (misaligned offsets), gguf: "
              "general.alignment (0 = 32)",
              "4096"},
             {"--dtype", "T", "F32, F16, U8 or Q8_0 (gguf)", "F32"},
             {"--seed", "S", "contents seed", "1"},
             {"--json", "", "print the written model's summary as JSON", ""}});
  if (!args.parse(argc, argv)) return exit_ok;

  synth::SynthSpec spec;
  spec.format = args.get("--format");
  spec.total_bytes = args.get_size("--size");
  const std::uint64_t tensors = args.get_uint("--tensors");
  if (tensors == 0 || tensors > 1'000'000)
    fail(ErrorCode::usage, "--tensors: ", tensors, " is not between 1 and 1000000");
  spec.tensor_count = static_cast<std::uint32_t>(tensors);
  spec.alignment = args.get_size("--alignment");
  if (spec.alignment & (spec.alignment - 1))
    fail(ErrorCode::usage, "--alignment: ", spec.alignment, " is not a power of two");
  const auto dtype = dtype_from_name(args.get("--dtype"));
  if (!dtype) fail(ErrorCode::usage, "--dtype: '", args.get("--dtype"), "' is not a dtype name");
  spec.dtype = *dtype;
  spec.seed = args.get_uint("--seed");

  const std::filesystem::path out = args.positional(0);
  synth::write_model(out, spec);

  // Read it back through the real readers: what is printed is what lwload will see.
  const Manifest m = open_manifest(out);
  if (args.flag("--json")) {
    const boost::json::object summary{{"path", out.string()},
                                      {"format", m.format},
                                      {"tensors", m.tensors.size()},
                                      {"total_bytes", m.total_bytes()},
                                      {"largest_tensor", m.largest_tensor_bytes()},
                                      {"alignment", spec.alignment},
                                      {"file_bytes", std::filesystem::file_size(out)}};
    std::cout << boost::json::serialize(summary) << '\n';
  } else {
    std::cout << "wrote " << out.string() << ": " << m.format << ", " << m.tensors.size() << " tensors of "
              << dtype_name(spec.dtype) << ", " << format_bytes(m.total_bytes()) << " of data ("
              << format_bytes(std::filesystem::file_size(out)) << " file), alignment " << spec.alignment
              << ", seed " << spec.seed << '\n';
  }
  return exit_ok;
}

}  // namespace lwload::cli

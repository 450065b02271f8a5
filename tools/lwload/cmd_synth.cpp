// lwload synth: writes a synthetic safetensors or GGUF model whose contents are a pure function of
// the seed, so `lwload load --verify` (and the tests) can check every byte that lands on a device.
#include <boost/json.hpp>
#include <iostream>

#include "cli.hpp"
#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "synth/synth.hpp"

namespace lwload::cli {
namespace {

// What the written file is, named the way --layout names it ("packed" also for a GGUF at 32).
std::string layout_of(const synth::SynthSpec& spec) {
  if (spec.alignment >= 4096) return "aligned";
  if (spec.alignment == synth::layout_alignment(spec.format, synth::Layout::packed)) return "packed";
  return "custom";
}

}  // namespace

int cmd_synth(int argc, char** argv) {
  Args args("synth", "Write a synthetic model with deterministic, verifiable contents.", {"OUT"},
            {{"--format", "F", "safetensors or gguf", "safetensors"},
             {"--size", "BYTES", "total tensor bytes (rounded to whole tensors)", "256MiB"},
             {"--tensors", "N", "tensor count", "8"},
             {"--layout", "L",
              "packed (as real writers: safetensors tensors back to back after an 8-byte-padded "
              "header, GGUF at alignment 32) or aligned (every tensor on a 4096-byte boundary); default packed",
              ""},
             {"--alignment", "A",
              "override the layout's tensor data alignment; safetensors: 0 = packed, gguf: "
              "general.alignment (0 = 32)",
              ""},
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
  const bool named_layout = args.get_optional("--layout").has_value();
  const auto layout = synth::layout_from_name(args.get_optional("--layout").value_or("packed"));
  if (!layout) fail(ErrorCode::usage, "--layout: '", args.get("--layout"), "' is not packed or aligned");
  spec.alignment = synth::layout_alignment(spec.format, *layout);
  if (args.get_optional("--alignment")) {
    // An explicit alignment wins; it only contradicts a layout that was named too.
    spec.alignment = args.get_size("--alignment");
    if (named_layout && *layout == synth::Layout::packed && spec.format == "safetensors" && spec.alignment > 8)
      fail(ErrorCode::usage, "--alignment ", spec.alignment,
           ": a packed safetensors file has no alignment (use --layout aligned)");
    if (named_layout && *layout == synth::Layout::aligned && spec.alignment == 0)
      fail(ErrorCode::usage, "--alignment 0 contradicts --layout aligned");
  }
  if (spec.alignment & (spec.alignment - 1))
    fail(ErrorCode::usage, "--alignment: ", spec.alignment, " is not a power of two");
  if (spec.format == "safetensors" && spec.alignment == 8) spec.alignment = 0;  // the header is padded to 8 anyway
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
                                      {"layout", layout_of(spec)},
                                      {"file_bytes", std::filesystem::file_size(out)}};
    std::cout << valid_utf8_json(boost::json::serialize(summary)) << '\n';
  } else {
    std::cout << "wrote " << printable(out.string()) << ": " << m.format << ", " << m.tensors.size() << " tensors of "
              << dtype_name(spec.dtype) << ", " << format_bytes(m.total_bytes()) << " of data ("
              << format_bytes(std::filesystem::file_size(out)) << " file), " << layout_of(spec) << " layout (alignment "
              << spec.alignment << "), seed " << spec.seed << '\n';
  }
  return exit_ok;
}

}  // namespace lwload::cli

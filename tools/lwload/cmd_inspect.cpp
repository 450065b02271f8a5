// lwload inspect: what is where in a model, from its headers alone.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "cli.hpp"
#include "lwload/manifest.hpp"
#include "lwload/manifest_json.hpp"

namespace lwload::cli {
namespace {

std::string shape_text(const TensorInfo& t) {
  std::string out = "[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) out += (i ? ", " : "") + std::to_string(t.shape[i]);
  return out + "]";
}

void print_table(const Manifest& m) {
  std::size_t name_width = 4;
  for (const auto& t : m.tensors) name_width = std::max(name_width, std::min<std::size_t>(t.name.size(), 48));
  std::cout << std::left << std::setw(static_cast<int>(name_width)) << "name" << "  " << std::setw(8) << "dtype"
            << std::setw(22) << "shape" << std::right << std::setw(14) << "bytes" << "  file  " << std::setw(14)
            << "offset" << "  a64 a4096\n";
  std::size_t page_aligned = 0;
  for (const auto& t : m.tensors) {
    std::cout << std::left << std::setw(static_cast<int>(name_width)) << t.name << "  " << std::setw(8)
              << dtype_name(t.dtype) << std::setw(22) << shape_text(t) << std::right << std::setw(14) << t.bytes;
    if (t.encoding != Encoding::raw) {
      std::cout << "  (" << encoding_name(t.encoding) << ": converted at load)\n";
      continue;
    }
    if (t.pieces.empty()) {
      std::cout << "  (no data)\n";
      continue;
    }
    const Piece& first = t.pieces.front();
    const bool a64 = first.offset % 64 == 0, a4096 = first.offset % 4096 == 0;
    page_aligned += a4096 && t.pieces.size() == 1;
    std::cout << "  " << std::setw(4) << first.file << "  " << std::setw(14) << first.offset << "  "
              << std::setw(3) << (a64 ? "yes" : "no") << ' ' << std::setw(5) << (a4096 ? "yes" : "no");
    if (t.pieces.size() > 1) std::cout << "  (+" << t.pieces.size() - 1 << " pieces)";
    std::cout << '\n';
  }
  const auto largest = std::max_element(m.tensors.begin(), m.tensors.end(),
                                        [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  std::cout << "\nformat:        " << m.format << "\nfiles:         " << m.files.size() << '\n';
  for (std::size_t i = 0; i < m.files.size(); ++i) std::cout << "  [" << i << "] " << m.files[i].string() << '\n';
  std::cout << "tensors:       " << m.tensors.size() << "\ntotal bytes:   " << m.total_bytes() << " ("
            << format_bytes(m.total_bytes()) << ")\n";
  if (largest != m.tensors.end())
    std::cout << "largest:       " << largest->name << " (" << format_bytes(largest->bytes) << ")\n";
  std::cout << "page-aligned:  " << page_aligned << " of " << m.tensors.size()
            << " tensors start on a 4096-byte boundary (ready for zero-copy import)\n";
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  Args args("inspect", "Reads a model's headers (no tensor data) and lists its tensors.", {"MODEL"},
            {{"--json", "", "print one JSON object (DESIGN.md's schema)", ""},
             {"--metadata", "", "with --json: include model metadata (GGUF KVs, ...)", ""},
             {"--format", "NAME", "skip detection and use this reader", ""}});
  if (!args.parse(argc, argv)) return exit_ok;
  OpenOptions options;
  options.format = args.get("--format");
  const Manifest manifest = open_manifest(args.positional(0), options);
  if (args.flag("--json"))
    std::cout << manifest_to_json(manifest, args.flag("--metadata")) << '\n';
  else
    print_table(manifest);
  return exit_ok;
}

}  // namespace lwload::cli

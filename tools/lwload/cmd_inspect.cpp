// lwload inspect: what is where in a model, from its headers alone.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "cli.hpp"
#include "load_options.hpp"
#include "lwload/manifest.hpp"
#include "lwload/manifest_json.hpp"
#include "lwload/plan.hpp"

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
  std::cout << std::left << std::setw(static_cast<int>(name_width)) << "name"
            << "  " << std::setw(8) << "dtype" << std::setw(22) << "shape" << std::right << std::setw(14) << "bytes"
            << "  file  " << std::setw(14) << "offset"
            << "  a64 a4096\n";
  std::size_t page_aligned = 0;
  for (const auto& t : m.tensors) {
    std::cout << std::left << std::setw(static_cast<int>(name_width)) << printable(t.name) << "  " << std::setw(8)
              << dtype_name(t.dtype) << std::setw(22) << shape_text(t) << std::right << std::setw(14) << t.bytes;
    if (t.encoding == Encoding::sparse) {
      std::cout << "  (sparse, " << t.sparsity->stored_values << " values stored: densified at load)\n";
      continue;
    }
    if (t.encoding != Encoding::raw) {
      std::cout << "  (" << encoding_name(t.encoding) << ": converted at load)\n";
      continue;
    }
    if (t.pieces.empty()) {
      std::cout << (t.sparsity ? "  (sparse, no values stored: all zeros)\n" : "  (no data)\n");
      continue;
    }
    const Piece& first = t.pieces.front();
    const bool a64 = first.offset % 64 == 0, a4096 = first.offset % 4096 == 0;
    page_aligned += a4096 && t.pieces.size() == 1;
    std::cout << "  " << std::setw(4) << first.file << "  " << std::setw(14) << first.offset << "  " << std::setw(3)
              << (a64 ? "yes" : "no") << ' ' << std::setw(5) << (a4096 ? "yes" : "no");
    if (t.pieces.size() > 1) std::cout << "  (+" << t.pieces.size() - 1 << " pieces)";
    if (t.sparsity) std::cout << "  (sparse: the stored values; --densify loads it dense)";
    std::cout << '\n';
  }
  const auto largest = std::max_element(m.tensors.begin(), m.tensors.end(),
                                        [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  std::cout << "\nformat:        " << m.format << "\nfiles:         " << m.files.size() << '\n';
  for (std::size_t i = 0; i < m.files.size(); ++i)
    std::cout << "  [" << i << "] " << printable(m.files[i].string()) << '\n';
  std::cout << "tensors:       " << m.tensors.size() << "\ntotal bytes:   " << m.total_bytes() << " ("
            << format_bytes(m.total_bytes()) << ")\n";
  if (largest != m.tensors.end())
    std::cout << "largest:       " << printable(largest->name) << " (" << format_bytes(largest->bytes) << ")\n";
  std::cout << "page-aligned:  " << page_aligned << " of " << m.tensors.size()
            << " tensors start on a 4096-byte boundary (zero-copy does not need it: imports cover the pages around"
               " each tensor)\n";
}

// Bytes this process has read through read(2)/pread(2) so far (/proc/self/io "rchar"), the
// evidence behind "opening a model reads its headers only".
std::uint64_t bytes_read_so_far() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value)
    if (key == "rchar:") return value;
  return 0;
}

// Peak resident set (VmHWM, KiB): readers that map headers (TFLite) touch pages instead of reading.
std::uint64_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("VmHWM:")) return std::stoull(line.substr(6));
  return 0;
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  Args args("inspect", "Reads a model's headers (no tensor data) and lists its tensors.", {"MODEL"},
            {{"--json", "", "print one JSON object (docs/ARCHITECTURE.md's schema)", ""},
             {"--metadata", "", "with --json: include model metadata (GGUF KVs, ...)", ""},
             {"--format", "NAME", "skip detection and use this reader", ""},
             links_option(),
             densify_option(),
             range_option(),
             {"--stats", "", "print to stderr the bytes read and the time taken to open the model", ""}});
  if (!args.parse(argc, argv)) return exit_ok;
  OpenOptions options;
  options.format = args.get("--format");
  const std::uint64_t read_before = bytes_read_so_far();
  const auto start = std::chrono::steady_clock::now();
  const Manifest manifest = open_model(args, options);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const std::uint64_t read_bytes = bytes_read_so_far() - read_before;
  if (args.flag("--stats")) {
    std::uint64_t file_bytes = 0;
    for (const auto& f : manifest.files) {
      std::error_code ec;
      file_bytes += std::filesystem::file_size(f, ec);
    }
    std::cerr << "opened in " << std::chrono::duration<double, std::milli>(elapsed).count() << " ms, read "
              << read_bytes << " bytes of " << file_bytes << " (" << manifest.tensors.size() << " tensors), peak RSS "
              << peak_rss_kib() << " KiB\n";
  }
  // The rule every load applies before reading (lwload/plan.hpp): decoding each encoded tensor
  // (--densify's sparse tensors among them) must fit this machine's memory. A model load would
  // refuse is refused here the same way, never described as if it would load.
  check_decodes_fit(manifest, machine_memory());
  if (args.flag("--json")) {
    // Streamed: the serializer writes valid UTF-8 itself, and holding the text would cost more
    // than the manifest (a million tensors write 110 MB).
    write_manifest_json(std::cout, manifest, args.flag("--metadata"));
    std::cout << '\n';
  } else {
    print_table(manifest);
  }
  return exit_ok;
}

}  // namespace lwload::cli

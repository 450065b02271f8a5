// The one place format readers are listed: detection order and open_manifest(). Above every wing.
#include <array>
#include <vector>

#include "formats/format.hpp"
#include "formats/gguf/gguf.hpp"
#include "formats/onnx/onnx.hpp"
#include "formats/pytorch/pytorch.hpp"
#include "formats/safetensors/safetensors.hpp"
#include "formats/tfjs/tfjs.hpp"
#include "formats/tflite/tflite.hpp"
#include "io/contained_file_system.hpp"
#include "io/retaining_file_system.hpp"
#include "io/sources.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

// Binary formats with magic numbers first; ONNX (no magic) and JSON-based TFJS last.
const std::array<const formats::FormatReader*, 6> kReaders{
    &formats::gguf_reader,    &formats::tflite_reader, &formats::safetensors_reader,
    &formats::pytorch_reader, &formats::tfjs_reader,   &formats::onnx_reader,
};

}  // namespace

std::vector<std::string> supported_formats() {
  std::vector<std::string> names;
  for (const auto* reader : kReaders) names.emplace_back(reader->name);
  return names;
}

namespace {

Manifest read_manifest(FileSystem& fs, const std::filesystem::path& path, const OpenOptions& options) {
  formats::ModelSource source{fs,
                              path,
                              fs.is_directory(path),
                              {},
                              formats::HeaderLimits{options.max_tensors, options.max_name_bytes},
                              options.densify};
  std::array<std::byte, 64> head{};
  if (!source.is_directory) {
    source.head = std::span(head).first(formats::read_head(fs, path, head));
  } else if (!fs.exists(path)) {
    fail(ErrorCode::io, path.string(), ": no such file or folder");
  }

  // Circle is TFLite's schema with extensions; one reader handles both.
  const std::string_view forced = options.format == "circle" ? "tflite" : std::string_view(options.format);
  for (const auto* reader : kReaders) {
    if (!forced.empty() ? reader->name == forced : reader->detect(source)) return reader->read(source);
  }
  if (!options.format.empty()) fail(ErrorCode::usage, "unknown format '", options.format, "'");
  fail(ErrorCode::bad_input, path.string(),
       ": not a model lwload recognises (safetensors, GGUF, PyTorch, ONNX, TFLite/Circle, TFJS)");
}

// The readers open files through a retaining layer: the manifest keeps the files whose headers it
// holds, and load() reads those, not what the paths name later.
Manifest open_through(std::shared_ptr<FileSystem> fs, const std::filesystem::path& path, const OpenOptions& options) {
  io::RetainingFileSystem retaining(fs);
  Manifest manifest = read_manifest(retaining, path, options);
  manifest.file_system = std::move(fs);
  manifest.opened.reserve(manifest.files.size());
  for (const auto& file : manifest.files) manifest.opened.push_back(retaining.opened(file));
  return manifest;
}

// A model that is not a path. The readers saw windows (offsets from 0); the load reads the
// containing files themselves, where each file's bytes start at its origin's offset, so regions
// cover the containing file's own pages (zero-copy at any offset) and reads are plain file offsets.
Manifest open_source(const std::shared_ptr<io::SourceFileSystem>& fs, const OpenOptions& options) {
  Manifest manifest = open_through(fs, fs->model_path(), options);
  std::vector<std::uint64_t> shift(manifest.files.size(), 0);
  for (std::size_t f = 0; f < manifest.files.size(); ++f) {
    if (const std::optional<io::Origin> origin = fs->origin(manifest.files[f])) {
      shift[f] = origin->offset;
      manifest.opened[f] = OpenedFile{origin->container, origin->identity, origin->offset};
    }
  }
  for (TensorInfo& t : manifest.tensors)
    for (Piece& piece : t.pieces) piece.offset += shift.at(piece.file);
  return manifest;
}

}  // namespace

Manifest open_manifest(const std::filesystem::path& path, const OpenOptions& options) {
  return open_through(
      std::make_shared<io::ContainedFileSystem>(options.file_system ? options.file_system : posix_file_system(), path,
                                                options.allow_outside_links),
      path, options);
}

Manifest open_manifest_fd(int fd, std::uint64_t offset, std::uint64_t length, const OpenOptions& options) {
  auto [file, origin] = io::open_range({fd, offset, length}, str("fd ", fd, " [", offset, ", +", length, "]"));
  return open_source(std::make_shared<io::SourceFileSystem>(std::move(file), std::move(origin), options.resolve),
                     options);
}

Manifest open_manifest_memory(std::span<const std::byte> bytes, const OpenOptions& options) {
  auto file =
      io::borrowed_memory(bytes, str("memory [", static_cast<const void*>(bytes.data()), ", +", bytes.size(), "]"));
  return open_source(std::make_shared<io::SourceFileSystem>(std::move(file), std::nullopt, nullptr), options);
}

}  // namespace lwload

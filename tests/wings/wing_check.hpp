// What each format wing's own suite checks (tests/wings): its reader alone reads real models
// through the FileSystem seam, and refuses another format's. Each suite links the wing, the formats
// base, io and core, nothing above (tests/meson.build), so the build shows the wing stands alone.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <span>
#include <string>

#include "formats/format.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::test {

// tests/data, or LWLOAD_TESTDATA (set by meson).
inline std::filesystem::path wing_testdata() {
  const char* dir = std::getenv("LWLOAD_TESTDATA");
  return dir ? std::filesystem::path(dir) : std::filesystem::path("tests/data");
}

// The source detection sees, as the registry makes it: the path and the file's first bytes.
struct WingSource {
  std::array<std::byte, 64> head{};
  formats::ModelSource source;

  WingSource(FileSystem& fs, const std::filesystem::path& path)
      : source{fs, path, fs.is_directory(path), {}, {}, false} {
    if (!source.is_directory) source.head = std::span(head).first(formats::read_head(fs, path, head));
  }
};

// `reader` detects and reads `path`; every tensor is named once and its pieces lie in its files.
// Returns the manifest's tensor count.
inline std::size_t check_reads(const formats::FormatReader& reader, FileSystem& fs, const std::filesystem::path& path) {
  CAPTURE(path);
  WingSource wing(fs, path);
  CHECK(reader.detect(wing.source));
  const Manifest manifest = reader.read(wing.source);
  std::set<std::string> names;
  for (const TensorInfo& t : manifest.tensors) {
    CAPTURE(t.name);
    CHECK(!t.name.empty());
    CHECK(names.insert(t.name).second);
    std::uint64_t stored = 0;
    for (const Piece& p : t.pieces) {
      REQUIRE(p.file < manifest.files.size());
      CHECK(p.offset + p.length <= fs.open(manifest.files[p.file])->size());
      stored += p.length;
    }
    if (t.encoding == Encoding::raw) CHECK(stored == t.bytes);
  }
  return manifest.tensors.size();
}

// Another format's model: `reader` refuses it with lwload::Error rather than misreading it.
inline void check_refuses(const formats::FormatReader& reader, FileSystem& fs, const std::filesystem::path& path) {
  CAPTURE(path);
  WingSource wing(fs, path);
  CHECK_THROWS_AS((void)reader.read(wing.source), Error);
}

}  // namespace lwload::test

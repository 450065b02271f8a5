// Containment without a race between check and open: a model folder's files are opened relative to
// the folder's descriptor, the rule applied by the kernel as it resolves each path (openat2
// RESOLVE_BENEATH) or, where openat2 is missing, by a component walk (forced here with
// io::force_component_walk, so both paths run on every kernel). A link flipped between a file
// inside and one outside while models open must never hand back the outside file's bytes.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "io/posix_file_system.hpp"
#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using namespace lwload;

namespace {

// A one-tensor safetensors file: tensor `name`, `bytes` bytes of `fill`.
std::string safetensors_with(const std::string& name, std::size_t bytes, char fill) {
  const std::string header = "{\"" + name + "\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(bytes) +
                             "],\"data_offsets\":[0," + std::to_string(bytes) + "]}}";
  std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((padded.size() >> (8 * i)) & 0xff);
  return out + padded + std::string(bytes, fill);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Forces the component walk for one scope.
struct Walk {
  bool before;
  explicit Walk(bool on) : before(io::force_component_walk(on)) {}
  ~Walk() { io::force_component_walk(before); }
};

// m/ holds an index naming two shards; shard 2 ("b", 64 bytes of 'i') is a regular file inside,
// outside.safetensors beside the folder has the same header and 64 bytes of 'o'.
struct Folder {
  test::TempDir dir;
  fs::path m = dir / "m";
  fs::path index = m / "model.safetensors.index.json";
  Folder() {
    fs::create_directory(m);
    test::write_file(m / "model-00001-of-00002.safetensors", safetensors_with("a", 16, 'a'));
    test::write_file(m / "model-00002-of-00002.safetensors", safetensors_with("b", 64, 'i'));
    test::write_file(dir / "outside.safetensors", safetensors_with("b", 64, 'o'));
    test::write_file(index, std::string(R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
                                        R"("b":"model-00002-of-00002.safetensors"}})"));
  }
};

// The bytes of tensor `name` as read from the file the manifest opened.
std::string tensor_bytes(const Manifest& manifest, const std::string& name) {
  for (const TensorInfo& t : manifest.tensors) {
    if (t.name != name) continue;
    std::string out;
    for (const Piece& p : t.pieces) {
      std::string chunk(p.length, '\0');
      manifest.opened.at(p.file).file->read_exact(p.offset, std::as_writable_bytes(std::span(chunk)), "test");
      out += chunk;
    }
    return out;
  }
  return {};
}

// Opens the model `rounds` times while another thread swaps shard 2 with a link out of the folder
// (renameat2 RENAME_EXCHANGE, atomic: the name always exists); counts what each open gave.
struct Tally {
  int inside = 0, refused = 0, outside = 0, other = 0;
};

Tally race(const Folder& f, const fs::path& link_target, int rounds) {
  const fs::path shard = f.m / "model-00002-of-00002.safetensors", alt = f.m / "alt.safetensors";
  fs::create_symlink(link_target, alt);
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread flipper([&] {
    while (!stop.load()) {
      if (::renameat2(AT_FDCWD, shard.c_str(), AT_FDCWD, alt.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
    }
  });
  Tally tally;
  for (int i = 0; i < rounds; ++i) {
    try {
      const Manifest manifest = open_manifest(f.index);
      const std::string b = tensor_bytes(manifest, "b");
      if (b == std::string(64, 'i')) ++tally.inside;
      else if (b == std::string(64, 'o')) ++tally.outside;
      else ++tally.other;
    } catch (const Error& e) {
      if (e.code() == ErrorCode::bad_input && contains(e.what(), "model folder")) ++tally.refused;
      else {
        MESSAGE(e.what());
        ++tally.other;
      }
    }
  }
  stop = true;
  flipper.join();
  MESSAGE(rounds << " opens, " << swaps.load() << " swaps: " << tally.inside << " read inside, " << tally.refused
                 << " refused, " << tally.outside << " read outside");
  return tally;
}

}  // namespace

TEST_CASE("a shard link flipped in and out of the folder while the model opens: nothing is read from outside") {
  for (const bool walk : {false, true}) {
    for (const bool absolute : {false, true}) {
      CAPTURE(walk);
      CAPTURE(absolute);
      Folder f;
      Walk mode(walk);
      const fs::path target = absolute ? f.dir / "outside.safetensors" : fs::path("..") / "outside.safetensors";
      const Tally t = race(f, target, 5000);
      CHECK(t.outside == 0);
      CHECK(t.other == 0);
      CHECK(t.inside + t.refused == 5000);
    }
  }
}

TEST_CASE("the component walk (openat2's fallback) holds the same rule as openat2") {
  for (const bool walk : {false, true}) {
    CAPTURE(walk);
    Walk mode(walk);
    Folder f;
    const fs::path shard = f.m / "model-00002-of-00002.safetensors";
    CHECK(tensor_bytes(open_manifest(f.index), "b") == std::string(64, 'i'));

    // Links that stay inside, through a subfolder and back with "..": followed.
    fs::create_directory(f.m / "sub");
    fs::rename(shard, f.m / "sub" / "real.safetensors");
    fs::create_symlink("sub/../sub/real.safetensors", shard);
    CHECK(tensor_bytes(open_manifest(f.index), "b") == std::string(64, 'i'));
    fs::remove(shard);
    fs::create_symlink("sub", f.m / "dirlink");
    fs::create_symlink("dirlink/real.safetensors", shard);
    CHECK(tensor_bytes(open_manifest(f.index), "b") == std::string(64, 'i'));

    // Out by a relative link, an absolute one, a ".." above the folder on the way back in, a link
    // to a folder outside: refused, naming the file and where it resolves.
    for (const fs::path& target :
         {fs::path("../outside.safetensors"), f.dir / "outside.safetensors", fs::path("../m/sub/real.safetensors"),
          fs::path("up/outside.safetensors"), fs::path("/proc/self/cwd")}) {
      CAPTURE(target);
      fs::remove(shard);
      fs::create_symlink(target, shard);
      if (!fs::exists(f.m / "up")) fs::create_symlink("..", f.m / "up");
      const Error e = test::error_of([&] { (void)open_manifest(f.index); });
      CHECK(e.code() == ErrorCode::bad_input);
      CHECK(contains(e.what(), shard.string() + ": resolves to"));
      CHECK(contains(e.what(), "model folder"));
      CHECK(contains(e.what(), "--allow-outside-links"));
    }
    // The same links followed when the caller allows links out.
    OpenOptions allow;
    allow.allow_outside_links = true;
    fs::remove(shard);
    fs::create_symlink("../outside.safetensors", shard);
    CHECK(tensor_bytes(open_manifest(f.index, allow), "b") == std::string(64, 'o'));

    // A loop of links: an error naming the file, not a hang.
    fs::remove(shard);
    fs::create_symlink("loop2", shard);
    fs::create_symlink("model-00002-of-00002.safetensors", f.m / "loop2");
    const Error loop = test::error_of([&] { (void)open_manifest(f.index); });
    CHECK(contains(loop.what(), "model-00002-of-00002.safetensors"));
    fs::remove(f.m / "loop2");

    // A FIFO under the shard's name: refused as what it is, without waiting for a writer.
    fs::remove(shard);
    REQUIRE(::mkfifo(shard.c_str(), 0600) == 0);
    const Error fifo = test::error_of([&] { (void)open_manifest(f.index); });
    CHECK(contains(fifo.what(), "is a FIFO"));
  }
}

TEST_CASE("a model folder reached through a link: the folder is what the user named, its files are held to it") {
  for (const bool walk : {false, true}) {
    CAPTURE(walk);
    Walk mode(walk);
    Folder f;
    fs::create_symlink("m", f.dir / "via");
    const Manifest manifest = open_manifest(f.dir / "via" / "model.safetensors.index.json");
    CHECK(tensor_bytes(manifest, "b") == std::string(64, 'i'));
  }
}

TEST_CASE("a relative path while the working folder is deleted: Error(io) naming the path, not a filesystem_error") {
  // std::filesystem::absolute throws its own filesystem_error there; the C++ API promises Error.
  test::TempDir dir;
  struct Back {
    fs::path to = fs::current_path();
    ~Back() { fs::current_path(to); }
  } back;
  const fs::path gone = dir / "deleted-cwd";
  fs::create_directory(gone);
  fs::current_path(gone);
  fs::remove(gone);
  for (const char* path : {"m.safetensors", "sub/model.safetensors.index.json"}) {
    CAPTURE(path);
    const Error e = test::error_of([&] { (void)open_manifest(path); });
    CHECK(e.code() == ErrorCode::io);
    CHECK(contains(e.what(), std::string(path) + ": cannot be resolved against the working folder"));
  }
}

// libFuzzer harness for a reader whose models name other files (safetensors index → shards, ONNX
// external data, TFJS shards, TFLite external buffer groups, split GGUF parts; LWLOAD_FUZZ_FORMAT
// names it), in a
// hostile folder. The input is the model file, written into a folder that also holds what a
// stranger's download may: a FIFO (also under a shard's name), links to /etc/passwd, /dev/zero,
// the parent folder, a file beside the folder and to themselves (a loop), a directory, and a few
// regular files and an inside link so that valid models get through too. fuzz/folder.dict lists
// the names, so mutations reach them.
//
// Oracle, beyond "only lwload::Error escapes": open_manifest never blocks on the FIFO (libFuzzer's
// -timeout), and every file of a manifest it returns is a regular file whose real path lies in
// the folder — or, with allow_outside_links (each input runs both ways), at least a regular file.
// Each input also opens the folder itself with no format named: detection looks through the
// folder (its FIFO, links and directory included) and the reader it picks finds its model there.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "lwload/error.hpp"
#include "lwload/manifest.hpp"

namespace {

[[noreturn]] void broken(const char* what, const std::string& path) {
  std::fprintf(stderr, "fuzz_folder: %s: %s\n", what, path.c_str());
  __builtin_trap();
}

void write_file(const std::string& path, const void* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) broken("cannot write", path);
  const auto* p = static_cast<const char*>(data);
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, p + done, size - done);
    if (n <= 0) broken("cannot write", path);
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

void link(const std::string& target, const std::string& path) {
  if (::symlink(target.c_str(), path.c_str()) != 0) broken("cannot link", path);
}

// A one-tensor safetensors file ("a", 16 bytes of U8).
std::string small_safetensors() {
  std::string header = R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(16, 'x');
}

// Part 2 of a split GGUF (llama.cpp's gguf-split): split.no 1 of split.count 2, 2 tensors in all,
// architecture "llama", tensor "b" (4 F32) at the data section's start (alignment 32).
std::string split_gguf_part2() {
  std::string out;
  const auto put = [&out](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  const auto text = [&](std::string_view t) {
    put(t.size(), 8);
    out += t;
  };
  out += "GGUF";
  put(3, 4);                                               // version
  put(1, 8);                                               // tensors
  put(4, 8);                                               // key/values
  text("general.architecture"), put(8, 4), text("llama");  // STRING
  text("split.no"), put(2, 4), put(1, 2);                  // UINT16
  text("split.count"), put(2, 4), put(2, 2);               // UINT16
  text("split.tensors.count"), put(5, 4), put(2, 4);       // INT32
  text("b"), put(1, 4), put(4, 8), put(0, 4), put(0, 8);   // 1 dim of 4, F32, offset 0
  out.append((32 - out.size() % 32) % 32, '\0');
  return out + std::string(16, '\0');
}

struct Folder {
  std::string root;      // holds the folder and a file beside it
  std::string dir;       // the model's folder
  std::string real_dir;  // its real path + "/"
  std::string model;     // the model file the input is written to
};

const char* model_name() {
  const std::string format = LWLOAD_FUZZ_FORMAT;
  if (format == "safetensors") return "model.safetensors.index.json";
  if (format == "onnx") return "model.onnx";
  if (format == "tfjs") return "model.json";
  if (format == "gguf") return "model-00001-of-00002.gguf";
  return "model.tflite";
}

// Made once per process and never destroyed: the exit handler that removes it runs after static
// destructors would have.
const Folder& folder() {
  static const Folder* const f = new Folder([] {
    char root_template[] = "/tmp/lwload-fuzz-folder-XXXXXX";
    if (!::mkdtemp(root_template)) broken("mkdtemp", root_template);
    Folder made;
    made.root = root_template;
    made.dir = made.root + "/m";
    if (::mkdir(made.dir.c_str(), 0700) != 0) broken("mkdir", made.dir);
    const std::string block(64 * 1024, '\0');
    for (const char* name : {"weights.bin", "data.bin", "group1-shard1of1.bin", "group1-shard1of2.bin"})
      write_file(made.dir + "/" + name, block.data(), block.size());
    const std::string shard = small_safetensors();
    write_file(made.dir + "/model-00001-of-00002.safetensors", shard.data(), shard.size());
    const std::string part2 = split_gguf_part2();
    write_file(made.dir + "/model-00002-of-00002.gguf", part2.data(), part2.size());
    write_file(made.root + "/outside.bin", block.data(), block.size());
    for (const char* name :
         {"fifo", "model-00002-of-00002.safetensors", "group1-shard2of2.bin", "model-00002-of-00003.gguf"})
      if (::mkfifo((made.dir + "/" + name).c_str(), 0600) != 0) broken("mkfifo", name);
    link("/etc/passwd", made.dir + "/passwd");
    link("/dev/zero", made.dir + "/zero");
    link("/dev/zero", made.dir + "/model-00003-of-00003.gguf");
    link("..", made.dir + "/up");
    link("../outside.bin", made.dir + "/outside.bin");
    link("loop", made.dir + "/loop");
    link("data.bin", made.dir + "/inside.bin");
    if (::mkdir((made.dir + "/dir").c_str(), 0700) != 0) broken("mkdir", "dir");
    char real[PATH_MAX];
    if (!::realpath(made.dir.c_str(), real)) broken("realpath", made.dir);
    made.real_dir = std::string(real) + "/";
    made.model = made.dir + "/" + model_name();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(folder().root, ec);
    });
    return made;
  }());
  return *f;
}

void check_files(const lwload::Manifest& manifest, bool contained) {
  for (const auto& file : manifest.files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) broken("a manifest file is not a regular file", file);
    char real[PATH_MAX];
    if (!::realpath(file.c_str(), real)) broken("realpath", file);
    if (contained && std::strncmp(real, folder().real_dir.c_str(), folder().real_dir.size()) != 0)
      broken("a manifest file lies outside the model folder", std::string(file) + " -> " + real);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Folder& f = folder();
  write_file(f.model, data, size);
  for (const bool allow : {false, true}) {
    lwload::OpenOptions options;
    options.format = LWLOAD_FUZZ_FORMAT;
    options.allow_outside_links = allow;
    try {
      check_files(lwload::open_manifest(f.model, options), !allow);
    } catch (const lwload::Error&) {
    }
  }
  try {
    check_files(lwload::open_manifest(f.dir, lwload::OpenOptions{}), true);
  } catch (const lwload::Error&) {
  }
  return 0;
}

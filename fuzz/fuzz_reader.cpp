// libFuzzer harness for one format reader (LWLOAD_FUZZ_FORMAT names it). The input is the model
// file, held in a memfd and opened through the real POSIX file system, so readers that map their
// headers (TFLite) run exactly as on disk. Any lwload::Error is a correct rejection; anything else
// (a crash, a sanitizer report, another exception type escaping) is a bug. Tensors whose bytes are
// encoded (ONNX typed fields, sparse TFLite densified) are decoded too, as a load would.
// fuzz_detect names no format (LWLOAD_FUZZ_FORMAT ""): detection, every reader's in the registry's
// order, and the reader it picks run on each input. JSON reaches its parser in 4 KiB chunks, not
// 64 KiB, so that inputs of the corpus's size (at most 64 KiB) also split keys, strings and
// numbers across chunks, as large manifests do.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <cstring>
#include <vector>

#include "formats/decode/encoded.hpp"
#include "formats/json/json_file.hpp"
#include "lwload/error.hpp"
#include "lwload/manifest.hpp"

namespace {

class MemFd {
 public:
  MemFd(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("lwload-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) __builtin_trap();
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) __builtin_trap();
      done += static_cast<std::size_t>(n);
    }
  }
  ~MemFd() { ::close(fd_); }
  MemFd(const MemFd&) = delete;
  MemFd& operator=(const MemFd&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  lwload::formats::set_json_chunk_bytes(4096);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const MemFd file(data, size);
  lwload::OpenOptions options;
  options.format = LWLOAD_FUZZ_FORMAT;
  options.densify = true;
  try {
    const lwload::Manifest manifest = lwload::open_manifest(file.path(), options);
    (void)manifest.total_bytes();
    for (const lwload::TensorInfo& t : manifest.tensors) {
      if (t.encoding == lwload::Encoding::raw || t.bytes > (std::uint64_t{16} << 20)) continue;
      std::vector<std::byte> encoded, out(t.bytes);
      for (const lwload::Piece& p : t.pieces) {
        if (p.file != 0 || p.offset > size || p.length > size - p.offset) __builtin_trap();  // a reader let it past
        const auto* from = reinterpret_cast<const std::byte*>(data + p.offset);
        encoded.insert(encoded.end(), from, from + p.length);
      }
      try {
        lwload::formats::decode_tensor(t, encoded, out, manifest.files.at(0));
      } catch (const lwload::Error&) {
      }
    }
  } catch (const lwload::Error&) {
  }
  return 0;
}

// C API manifests: open_manifest behind lwload_manifest, tensors described in C structs that point
// into the C++ manifest (valid while it lives).
#include "capi/capi_objects.hpp"
#include "capi/capi_struct.hpp"
#include "loading/option_text.hpp"
#include "lwload/error.hpp"
#include "lwload/manifest.hpp"

#include <string>
#include <utility>

using lwload::capi::guarded;
using lwload::capi::require;

namespace {

// The C API hands names out as C strings, which end at the first NUL: "a\0b" would read as "a" —
// another tensor's name, or one lwload_weights_find and "only" reach in place of the real one.
// Such a model is refused when opened through the C API, naming the tensor (the C++ API, whose
// names are std::string, reads it as it is).
lwload_manifest* c_manifest(lwload::Manifest manifest) {
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
    const std::string& name = manifest.tensors[i].name;
    const auto nul = name.find('\0');
    if (nul == std::string::npos) continue;
    std::string shown;
    for (const char c : name) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u < 0x7f) {
        shown += c;
      } else {
        static constexpr char kHex[] = "0123456789abcdef";
        shown += "\\x";
        shown += kHex[u >> 4];
        shown += kHex[u & 15];
      }
    }
    const auto& file = manifest.tensors[i].pieces.empty() ? manifest.files.front()
                                                          : manifest.files.at(manifest.tensors[i].pieces[0].file);
    lwload::fail(lwload::ErrorCode::bad_input, file.string(), ": tensor #", i, " '", shown,
                 "': its name holds a NUL byte (at ", nul, "); as a C string it would read as '", shown.substr(0, nul),
                 "', so the C API refuses the model");
  }
  return new lwload_manifest{std::move(manifest)};
}

}  // namespace

extern "C" {

lwload_manifest* lwload_manifest_open(const char* path, lwload_error** err) {
  return lwload_manifest_open_with(path, nullptr, err);
}

lwload_open_options* lwload_open_options_new(void) { return lwload::capi::new_handle<lwload_open_options>(); }

void lwload_open_options_free(lwload_open_options* o) { delete o; }

lwload_status lwload_open_options_set(lwload_open_options* o, const char* key, const char* value, lwload_error** err) {
  return lwload::capi::set_option(o, key, value, err, lwload::set_open_option, "lwload_open_options_set");
}

lwload_manifest* lwload_manifest_open_with(const char* path, const lwload_open_options* o, lwload_error** err) {
  return guarded(err, static_cast<lwload_manifest*>(nullptr), [&] {
    require(path, "lwload_manifest_open", "path");
    return c_manifest(lwload::open_manifest(path, o ? o->options : lwload::OpenOptions{}));
  });
}

lwload_manifest* lwload_manifest_open_fd(int fd, uint64_t offset, uint64_t length, const char* format,
                                         const lwload_open_options* o, lwload_error** err) {
  return guarded(err, static_cast<lwload_manifest*>(nullptr), [&] {
    lwload::OpenOptions options = o ? o->options : lwload::OpenOptions{};
    if (format) options.format = format;
    return c_manifest(lwload::open_manifest_fd(fd, offset, length, options));
  });
}

lwload_manifest* lwload_manifest_open_memory(const void* data, size_t size, const char* format,
                                             const lwload_open_options* o, lwload_error** err) {
  return guarded(err, static_cast<lwload_manifest*>(nullptr), [&] {
    if (size != 0) require(data, "lwload_manifest_open_memory", "data");
    lwload::OpenOptions options = o ? o->options : lwload::OpenOptions{};
    if (format) options.format = format;
    return c_manifest(lwload::open_manifest_memory({static_cast<const std::byte*>(data), size}, options));
  });
}

void lwload_manifest_free(lwload_manifest* m) { delete m; }

size_t lwload_manifest_tensor_count(const lwload_manifest* m) { return m ? m->manifest.tensors.size() : 0; }

lwload_status lwload_manifest_tensor(const lwload_manifest* m, size_t index, lwload_tensor_info* out,
                                     lwload_error** err) {
  return lwload::capi::status_call(err, [&] {
    require(m, "lwload_manifest_tensor", "manifest");
    const lwload::Manifest& manifest = m->manifest;
    if (index >= manifest.tensors.size())
      lwload::fail(lwload::ErrorCode::usage, "lwload_manifest_tensor: index ", index,
                   " is out of range (the manifest has ", manifest.tensors.size(), " tensors)");
    const lwload::TensorInfo& t = manifest.tensors[index];
    // dtype and encoding names are string literals (lib/core), so their views are NUL-terminated.
    const lwload_tensor_info full{sizeof(lwload_tensor_info),
                                  t.name.c_str(),
                                  lwload::dtype_name(t.dtype).data(),
                                  t.shape.size(),
                                  t.shape.data(),
                                  t.bytes,
                                  t.pieces.empty() ? nullptr : manifest.files[t.pieces.front().file].c_str(),
                                  lwload::encoding_name(t.encoding).data(),
                                  t.sparsity ? LWLOAD_TENSOR_SPARSE : 0};
    lwload::capi::fill(out, full, "lwload_manifest_tensor");
  });
}

const char* lwload_manifest_format(const lwload_manifest* m) { return m ? m->manifest.format.c_str() : ""; }

uint64_t lwload_manifest_total_bytes(const lwload_manifest* m) { return m ? m->manifest.total_bytes() : 0; }

}  // extern "C"

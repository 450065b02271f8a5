// The fake ggml device (fake_device.hpp): ggml's backend interface filled in by hand, as an
// out-of-tree ggml backend fills it.
#include "fake_device.hpp"

#include <cstdlib>
#include <cstring>

#include <ggml-backend-impl.h>

namespace fake {
namespace {

Config config;
Counts count;

struct BufferContext {
  void* data;
  bool owned;  // allocated here (freed with the buffer), or imported host memory
};

void note_alive() {
  ++count.live;
  if (count.live > count.peak_live) count.peak_live = count.live;
}

void buffer_free(ggml_backend_buffer_t buffer) {
  auto* context = static_cast<BufferContext*>(buffer->context);
  if (context->owned) std::free(context->data);
  delete context;
  --count.live;
}
void* buffer_base(ggml_backend_buffer_t buffer) { return static_cast<BufferContext*>(buffer->context)->data; }
void buffer_memset(ggml_backend_buffer_t, ggml_tensor* tensor, uint8_t value, size_t offset, size_t size) {
  std::memset(static_cast<char*>(tensor->data) + offset, value, size);
}
void buffer_set(ggml_backend_buffer_t, ggml_tensor* tensor, const void* data, size_t offset, size_t size) {
  std::memcpy(static_cast<char*>(tensor->data) + offset, data, size);
}
void buffer_get(ggml_backend_buffer_t, const ggml_tensor* tensor, void* data, size_t offset, size_t size) {
  std::memcpy(data, static_cast<const char*>(tensor->data) + offset, size);
}
void buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
  std::memset(buffer_base(buffer), value, buffer->size);
}

const ggml_backend_buffer_i buffer_interface = {
    /* .free_buffer   = */ buffer_free,
    /* .get_base      = */ buffer_base,
    /* .init_tensor   = */ nullptr,
    /* .memset_tensor = */ buffer_memset,
    /* .set_tensor    = */ buffer_set,
    /* .get_tensor    = */ buffer_get,
    /* .set_tensor_2d = */ nullptr,
    /* .get_tensor_2d = */ nullptr,
    /* .cpy_tensor    = */ nullptr,
    /* .clear         = */ buffer_clear,
    /* .reset         = */ nullptr,
};

const char* type_name(ggml_backend_buffer_type_t) { return "Fake"; }
ggml_backend_buffer_t type_alloc(ggml_backend_buffer_type_t type, size_t size) {
  if (count.live >= config.max_live || size > config.max_buffer) {
    ++count.refused_allocations;
    return nullptr;
  }
  void* data = std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (!data) return nullptr;
  ++count.allocations;
  note_alive();
  return ggml_backend_buffer_init(type, buffer_interface, new BufferContext{data, true}, size);
}
size_t type_alignment(ggml_backend_buffer_type_t) { return 32; }
size_t type_max_size(ggml_backend_buffer_type_t) { return config.max_buffer; }
bool type_is_host(ggml_backend_buffer_type_t) { return config.host_buffers; }

extern ggml_backend_device fake_device;

ggml_backend_buffer_type buffer_type = {
    /* .iface = */ {
        /* .get_name       = */ type_name,
        /* .alloc_buffer   = */ type_alloc,
        /* .get_alignment  = */ type_alignment,
        /* .get_max_size   = */ type_max_size,
        /* .get_alloc_size = */ nullptr,
        /* .is_host        = */ type_is_host,
    },
    /* .device  = */ &fake_device,
    /* .context = */ nullptr,
};

const char* device_name(ggml_backend_dev_t) { return "Fake0"; }
const char* device_description(ggml_backend_dev_t) { return "a test's own ggml device"; }
void device_memory(ggml_backend_dev_t, size_t* free, size_t* total) { *free = *total = 0; }
enum ggml_backend_dev_type device_type(ggml_backend_dev_t) { return config.type; }
void device_props(ggml_backend_dev_t dev, ggml_backend_dev_props* props) {
  props->name = device_name(dev);
  props->description = device_description(dev);
  props->memory_free = props->memory_total = 0;
  props->type = config.type;
  props->device_id = nullptr;
  props->caps = {false, false, config.caps_say_import, false, false};
}
ggml_backend_buffer_type_t device_buffer_type(ggml_backend_dev_t) { return &buffer_type; }
ggml_backend_buffer_t device_from_host_ptr(ggml_backend_dev_t, void* ptr, size_t size, size_t) {
  ++count.import_calls;
  if (config.entry == Config::Entry::declines) return nullptr;
  if (reinterpret_cast<std::uintptr_t>(ptr) % config.import_alignment || size % config.import_alignment) {
    ++count.misaligned_imports;
    return nullptr;
  }
  if (size > config.max_buffer) {
    ++count.oversized_imports;
    return nullptr;
  }
  if (count.imports >= config.declines_after || count.live >= config.max_live) return nullptr;
  ++count.imports;
  note_alive();
  return ggml_backend_buffer_init(&buffer_type, buffer_interface, new BufferContext{ptr, false}, size);
}
bool device_supports_op(ggml_backend_dev_t, const ggml_tensor*) { return false; }
bool device_supports_buft(ggml_backend_dev_t, ggml_backend_buffer_type_t type) { return type == &buffer_type; }

ggml_backend_device_i device_interface() {
  ggml_backend_device_i iface{};
  iface.get_name = device_name;
  iface.get_description = device_description;
  iface.get_memory = device_memory;
  iface.get_type = device_type;
  iface.get_props = device_props;
  iface.get_buffer_type = device_buffer_type;
  iface.buffer_from_host_ptr = device_from_host_ptr;
  iface.supports_op = device_supports_op;
  iface.supports_buft = device_supports_buft;
  return iface;
}

const char* reg_name(ggml_backend_reg_t) { return "Fake"; }
size_t reg_device_count(ggml_backend_reg_t) { return 1; }
ggml_backend_dev_t reg_device(ggml_backend_reg_t, size_t) { return &fake_device; }

ggml_backend_reg fake_reg = {
    /* .api_version = */ GGML_BACKEND_API_VERSION,
    /* .iface       = */ {reg_name, reg_device_count, reg_device, nullptr},
    /* .context     = */ nullptr,
};

ggml_backend_device fake_device = {device_interface(), &fake_reg, nullptr};

}  // namespace

ggml_backend_dev_t device(const Config& wanted) {
  static const bool registered = [] {
    ggml_backend_register(&fake_reg);
    return true;
  }();
  (void)registered;
  config = wanted;
  // The entry as the config says: present, or NULL as CUDA's.
  fake_device.iface.buffer_from_host_ptr = wanted.entry == Config::Entry::none ? nullptr : device_from_host_ptr;
  const std::size_t live = count.live;
  count = Counts{};
  count.live = live;
  return &fake_device;
}

const Counts& counts() { return count; }

}  // namespace fake

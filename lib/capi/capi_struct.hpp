// The structs the C API fills (lwload_tensor_info, lwload_tensor_handle) begin with the caller's
// struct_size, so a program built against older headers (a shorter struct) and one built against
// newer headers (a longer struct) both work with this library: it writes only the whole fields
// that fit, never past struct_size, and answers how much it filled in struct_size.
#pragma once

#include "capi/layer.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

#include "capi/capi_objects.hpp"
#include "lwload/error.hpp"

namespace lwload::capi {

// Where each field after struct_size ends (offsetof + sizeof), in declaration order.
#define LWLOAD_FIELD_END(type, field) (offsetof(type, field) + sizeof(type::field))
inline constexpr std::size_t tensor_info_field_ends[] = {
    LWLOAD_FIELD_END(lwload_tensor_info, name),     LWLOAD_FIELD_END(lwload_tensor_info, dtype),
    LWLOAD_FIELD_END(lwload_tensor_info, rank),     LWLOAD_FIELD_END(lwload_tensor_info, shape),
    LWLOAD_FIELD_END(lwload_tensor_info, bytes),    LWLOAD_FIELD_END(lwload_tensor_info, file),
    LWLOAD_FIELD_END(lwload_tensor_info, encoding), LWLOAD_FIELD_END(lwload_tensor_info, flags)};
inline constexpr std::size_t tensor_handle_field_ends[] = {
    LWLOAD_FIELD_END(lwload_tensor_handle, name),        LWLOAD_FIELD_END(lwload_tensor_handle, placement),
    LWLOAD_FIELD_END(lwload_tensor_handle, native_type), LWLOAD_FIELD_END(lwload_tensor_handle, native),
    LWLOAD_FIELD_END(lwload_tensor_handle, offset),      LWLOAD_FIELD_END(lwload_tensor_handle, bytes),
    LWLOAD_FIELD_END(lwload_tensor_handle, file_offset)};
#undef LWLOAD_FIELD_END
static_assert(tensor_info_field_ends[0] == LWLOAD_TENSOR_INFO_MIN_SIZE && std::size(tensor_info_field_ends) == 8 &&
              tensor_info_field_ends[7] == sizeof(lwload_tensor_info));
static_assert(tensor_handle_field_ends[0] == LWLOAD_TENSOR_HANDLE_MIN_SIZE &&
              std::size(tensor_handle_field_ends) == 7 && tensor_handle_field_ends[6] == sizeof(lwload_tensor_handle));

// Copies into *out the fields of `full` (the struct as this library fills it) that fit in
// out->struct_size. Throws Error(usage) for a NULL `out` or a struct_size below `min_size`.
template <typename CStruct>
void fill_sized(CStruct* out, const CStruct& full, std::span<const std::size_t> field_ends, std::size_t min_size,
                const char* function, const char* type) {
  require(out, function, "out");
  if (out->struct_size < min_size)
    fail(ErrorCode::usage, function, ": out->struct_size is ", out->struct_size, ", less than any version of ", type,
         " (set it to sizeof(", type, "); at least ", min_size, ")");
  std::size_t filled = sizeof(CStruct::struct_size);
  for (std::size_t end : field_ends)
    if (end <= out->struct_size) filled = std::max(filled, end);
  constexpr std::size_t skip = sizeof(CStruct::struct_size);  // the caller's own; rewritten below
  std::memcpy(reinterpret_cast<unsigned char*>(out) + skip, reinterpret_cast<const unsigned char*>(&full) + skip,
              filled - skip);
  out->struct_size = filled;
}

inline void fill(lwload_tensor_info* out, const lwload_tensor_info& full, const char* function) {
  fill_sized(out, full, tensor_info_field_ends, LWLOAD_TENSOR_INFO_MIN_SIZE, function, "lwload_tensor_info");
}

inline void fill(lwload_tensor_handle* out, const lwload_tensor_handle& full, const char* function) {
  fill_sized(out, full, tensor_handle_field_ends, LWLOAD_TENSOR_HANDLE_MIN_SIZE, function, "lwload_tensor_handle");
}

}  // namespace lwload::capi

// C API errors: lwload::Error codes as lwload_status values, messages kept verbatim.
#include <filesystem>
#include <new>
#include <stdexcept>
#include <system_error>

#include "capi/capi_objects.hpp"
#include "lwload/error.hpp"

namespace lwload::capi {
namespace {

lwload_status status_for(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::bad_input: return LWLOAD_BAD_INPUT;
    case ErrorCode::io: return LWLOAD_IO;
    case ErrorCode::device: return LWLOAD_DEVICE;
    case ErrorCode::out_of_memory: return LWLOAD_OUT_OF_MEMORY;
    case ErrorCode::does_not_fit: return LWLOAD_DOES_NOT_FIT;
    case ErrorCode::cancelled: return LWLOAD_CANCELLED;
    case ErrorCode::usage: return LWLOAD_USAGE;
    case ErrorCode::unsupported: return LWLOAD_UNSUPPORTED;
  }
  return LWLOAD_DEVICE;
}

// What not_found throws: a lookup miss, which the C++ API answers with nullptr rather than an Error.
struct NotFound : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Handed out when even the error object cannot be allocated; lwload_error_free leaves it alone.
lwload_error out_of_memory_error{LWLOAD_OUT_OF_MEMORY, "out of memory"};

}  // namespace

void store_current_error(lwload_error** err) noexcept {
  if (err == nullptr) return;
  lwload_status status = LWLOAD_DEVICE;
  const char* message = "unknown error";
  try {
    throw;
  } catch (const Error& e) {
    status = status_for(e.code());
    message = e.what();
  } catch (const NotFound& e) {
    status = LWLOAD_NOT_FOUND;
    message = e.what();
  } catch (const std::bad_alloc&) {
    *err = &out_of_memory_error;
    return;
  } catch (const std::system_error& e) {  // std::filesystem errors among them
    status = LWLOAD_IO;
    message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  try {
    *err = new lwload_error{status, message};
  } catch (...) {
    *err = &out_of_memory_error;
  }
}

void not_found(std::string message) { throw NotFound(message); }

void require(const void* argument, const char* function, const char* what) {
  if (argument == nullptr) fail(ErrorCode::usage, function, ": ", what, " is NULL");
}

}  // namespace lwload::capi

extern "C" {

lwload_status lwload_error_status(const lwload_error* e) { return e ? e->status : LWLOAD_OK; }

const char* lwload_error_message(const lwload_error* e) { return e ? e->message.c_str() : ""; }

void lwload_error_free(lwload_error* e) {
  if (e != &lwload::capi::out_of_memory_error) delete e;
}

const char* lwload_status_name(lwload_status status) {
  if (status == LWLOAD_OK) return "ok";
  if (status == LWLOAD_NOT_FOUND) return "not_found";  // a C API status only (see not_found)
  // The C++ names (error_code_name returns literals, so NUL-terminated), through the one mapping.
  for (int code = 0; code <= static_cast<int>(lwload::ErrorCode::unsupported); ++code)
    if (lwload::capi::status_for(static_cast<lwload::ErrorCode>(code)) == status)
      return lwload::error_code_name(static_cast<lwload::ErrorCode>(code)).data();
  return "unknown";
}

}  // extern "C"

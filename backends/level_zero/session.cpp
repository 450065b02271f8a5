// Context and read-back command list lifetime for one opened Level Zero device.
#include "backends/level_zero/session.hpp"

#include "backends/level_zero/check.hpp"
#include "lwload/error.hpp"

namespace lwload::level_zero {

std::shared_ptr<Session> Session::open(const FoundDevice& found) {
  ze_context_handle_t context = nullptr;
  const ze_context_desc_t context_desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  check(zeContextCreate(found.driver, &context_desc, &context), str(found.info.id(), " (", found.info.name, ")"),
        "zeContextCreate");
  try {
    auto session = start(found, context);
    session->owns_context_ = true;
    return session;
  } catch (...) {
    zeContextDestroy(context);
    throw;
  }
}

std::shared_ptr<Session> Session::adopt(const FoundDevice& found, ze_context_handle_t context) {
  if (context == nullptr) fail(ErrorCode::usage, found.info.id(), ": no Level Zero context given");
  return start(found, context);
}

std::shared_ptr<Session> Session::start(const FoundDevice& found, ze_context_handle_t context) {
  std::shared_ptr<Session> s(new Session);
  s->context_ = context;
  s->driver_ = found.driver;
  s->device_ = found.device;
  s->copy_ordinal_ = found.copy_ordinal;
  s->import_ = found.import;
  s->label_ = str(found.info.id(), " (", found.info.name, ")");
  if (found.import == ImportPath::zex) {
    void* import_fn = nullptr;
    void* release_fn = nullptr;
    check(zeDriverGetExtensionFunctionAddress(found.driver, kImportExternalPointerName, &import_fn), s->label_,
          "zeDriverGetExtensionFunctionAddress", kImportExternalPointerName);
    check(zeDriverGetExtensionFunctionAddress(found.driver, kReleaseImportedPointerName, &release_fn), s->label_,
          "zeDriverGetExtensionFunctionAddress", kReleaseImportedPointerName);
    s->import_fn_ = reinterpret_cast<ImportExternalPointerFn>(import_fn);
    s->release_fn_ = reinterpret_cast<ReleaseImportedPointerFn>(release_fn);
  }
  const ze_command_queue_desc_t list_desc{
      ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, found.copy_ordinal, 0, 0, ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
      ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  check(zeCommandListCreateImmediate(s->context_, found.device, &list_desc, &s->sync_list_), s->label_,
        "zeCommandListCreateImmediate", "synchronous read-back list");
  return s;
}

Session::~Session() {
  if (sync_list_ != nullptr) zeCommandListDestroy(sync_list_);
  if (owns_context_) zeContextDestroy(context_);
}

void Session::copy_now(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(sync_mutex_);  // an immediate list is not safe for concurrent appends
  check(zeCommandListAppendMemoryCopy(sync_list_, dst, src, bytes, nullptr, 0, nullptr), label_,
        "zeCommandListAppendMemoryCopy", str(bytes, " bytes, read-back"));
}

}  // namespace lwload::level_zero

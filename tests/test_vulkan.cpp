// The vulkan backend for real, on lavapipe (Mesa's CPU Vulkan driver), under the Khronos
// validation layer: every placement loads and verifies with no validation message, for a packed
// safetensors and a GGUF at llama.cpp's 32-byte alignment; a declined import falls back to direct
// with the driver's reason; regions respect a lowered allocation limit; the typed accessor hands
// out the VkBuffer; an application's own Vulkan objects, handed over each way the APIs offer, are
// loaded into and left alive. Skipped (with a message) where no Vulkan device or no validation layer is
// present; a failure instead when LWLOAD_REQUIRE names vulkan / validation (CI).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <string>
#include <string_view>
#include <vector>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/lwload.h"
#include "lwload/manifest.hpp"
#include "lwload/vulkan.hpp"
#include "support/budget_checks.hpp"
#include "support/verify_checks.hpp"
#include "support/faulty_device.hpp"
#include "support/range_checks.hpp"
#include "support/truncation_checks.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;

namespace {

bool have_vulkan() {
  const auto backend = BackendRegistry::instance().find("vulkan");
  return test::available("vulkan", backend && !backend->devices().empty(),
                         "no Vulkan device (install mesa-vulkan-drivers)");
}

// Without the layer, LWLOAD_VULKAN_VALIDATION=1 runs unvalidated and "no VUID" proves nothing.
bool have_validation_layer() {
  std::uint32_t count = 0;
  bool found = false;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) == VK_SUCCESS) {
    std::vector<VkLayerProperties> layers(count);
    if (vkEnumerateInstanceLayerProperties(&count, layers.data()) == VK_SUCCESS)
      for (const VkLayerProperties& l : layers)
        if (std::string_view(l.layerName) == "VK_LAYER_KHRONOS_validation") found = true;
  }
  return test::available("validation", found,
                         "the Khronos validation layer is not installed (vulkan-validationlayers): no VUID check");
}

std::filesystem::path write_synth(const test::TempDir& dir, const std::string& format, std::uint64_t alignment,
                                  std::uint64_t bytes = 24 << 20, std::uint32_t tensors = 12) {
  synth::SynthSpec spec;
  spec.format = format;
  spec.total_bytes = bytes;
  spec.tensor_count = tensors;
  spec.alignment = alignment;
  const auto path = dir / ("model." + format);
  synth::write_model(path, spec);
  return path;
}

// `lwload load ... --verify` under the validation layer; returns the output (stdout + stderr).
std::string load_validated(const std::filesystem::path& model, const std::string& extra, int* status) {
  std::string out;
  *status = test::run_command("env LWLOAD_VULKAN_VALIDATION=1 " + std::string(std::getenv("LWLOAD_EXE")) + " load " +
                                  model.string() + " --device vulkan:0 --verify --budget 1MiB " + extra + " 2>&1",
                              &out);
  return out;
}

// An application's own Vulkan objects, made as an engine makes them: an instance with the
// validation layer and a messenger counting what it reports, the first physical device, and a
// device on the first queue family that takes transfers, with VK_EXT_external_memory_host when the
// driver offers it (so lwload may import).
struct AppVulkan {
  VulkanContext context;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  int reports = 0;  // validation warnings and errors

  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    ++static_cast<AppVulkan*>(user)->reports;
    MESSAGE("validation: " << data->pMessage);
    return VK_FALSE;
  }

  AppVulkan() {
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_1;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* debug_utils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkInstanceCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    info.pApplicationInfo = &app;
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &layer;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = &debug_utils;
    REQUIRE(vkCreateInstance(&info, nullptr, &context.instance) == VK_SUCCESS);
    VkDebugUtilsMessengerCreateInfoEXT report{};
    report.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    report.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    report.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    report.pfnUserCallback = on_message;
    report.pUserData = this;
    const auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(context.instance, "vkCreateDebugUtilsMessengerEXT"));
    const bool has_debug_utils = create != nullptr;
    REQUIRE(has_debug_utils);
    REQUIRE(create(context.instance, &report, nullptr, &messenger) == VK_SUCCESS);

    std::uint32_t count = 1;
    const VkResult found = vkEnumeratePhysicalDevices(context.instance, &count, &context.physical);
    REQUIRE((found == VK_SUCCESS || found == VK_INCOMPLETE));
    REQUIRE(count == 1);
    std::uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(context.physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(context.physical, &families, props.data());
    const VkQueueFlags transfers = VK_QUEUE_TRANSFER_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT;
    while (context.queue_family < families && !(props[context.queue_family].queueFlags & transfers))
      ++context.queue_family;
    REQUIRE(context.queue_family < families);

    std::uint32_t offered = 0;
    vkEnumerateDeviceExtensionProperties(context.physical, nullptr, &offered, nullptr);
    std::vector<VkExtensionProperties> extensions(offered);
    vkEnumerateDeviceExtensionProperties(context.physical, nullptr, &offered, extensions.data());
    const char* host_memory = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    const bool can_import = std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties& e) {
      return std::string_view(e.extensionName) == host_memory;
    });
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{};
    queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queue.queueFamilyIndex = context.queue_family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo device{};
    device.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    device.queueCreateInfoCount = 1;
    device.pQueueCreateInfos = &queue;
    device.enabledExtensionCount = can_import ? 1 : 0;
    device.ppEnabledExtensionNames = &host_memory;
    REQUIRE(vkCreateDevice(context.physical, &device, nullptr, &context.device) == VK_SUCCESS);
  }

  ~AppVulkan() {
    vkDestroyDevice(context.device, nullptr);
    const auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(context.instance, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(context.instance, messenger, nullptr);
    vkDestroyInstance(context.instance, nullptr);
  }
  AppVulkan(const AppVulkan&) = delete;
  AppVulkan& operator=(const AppVulkan&) = delete;
};

}  // namespace

TEST_CASE("vulkan: every placement loads and verifies on lavapipe with no validation message") {
  if (!have_vulkan() || !test::have_exe() || !have_validation_layer()) return;
  test::TempDir dir;
  for (const auto& model : {write_synth(dir, "safetensors", 0), write_synth(dir, "gguf", 32)}) {
    for (const std::string placement : {"zero-copy", "direct", "staged"}) {
      CAPTURE(model.string());
      CAPTURE(placement);
      int status = -1;
      const std::string out = load_validated(model, "--placement " + placement, &status);
      INFO(out);
      CHECK(status == 0);
      CHECK(out.find("verify: ok, 12 tensors") != std::string::npos);
      const std::string expect = placement == "zero-copy" ? "zero_copy 12,"
                                 : placement == "direct"  ? "direct 12,"
                                                          : "staged 12,";
      CHECK(out.find(expect) != std::string::npos);
      CHECK(out.find("VUID") == std::string::npos);
      CHECK(out.find("Validation") == std::string::npos);
      CHECK(out.find("warning: --placement") == std::string::npos);  // honoured for every tensor
    }
  }
}

TEST_CASE("vulkan: a model at an odd offset of a container (fd) and in memory loads and verifies, every placement") {
  if (!have_vulkan()) return;
  test::TempDir dir;
  const auto path = write_synth(dir, "safetensors", 0, 2 << 20, 6);
  const auto model = test::read_file(path);
  constexpr std::size_t kPrefix = 4099;
  std::vector<std::byte> container(kPrefix + model.size() + 777, std::byte{0xee});
  std::copy(model.begin(), model.end(), container.begin() + kPrefix);
  test::write_file(dir / "app.apk", container);
  const int fd = ::open((dir / "app.apk").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const Manifest from_fd = open_manifest_fd(fd, kPrefix, model.size());
  ::close(fd);
  const Manifest from_memory = open_manifest_memory(model);
  const auto device = open_device("vulkan:0");
  for (const Manifest* m : {&from_fd, &from_memory}) {
    for (const std::optional<Placement> force :
         {std::optional<Placement>{}, std::optional{Placement::direct}, std::optional{Placement::staged}}) {
      LoadOptions options;
      options.plan.force = force;
      const Weights w = load(*m, *device, options);
      CHECK(verify(w).tensors == 6);
      if (!force && m == &from_fd) CHECK(w.plan().count(Placement::zero_copy) == 6);
    }
  }
}

TEST_CASE("vulkan: budgets — too little free refused with the numbers; regions past the import limit load direct") {
  if (have_vulkan()) test::check_device_budgets("vulkan:0");
}

TEST_CASE("vulkan: a byte changed in device memory fails verify, naming the tensor and the offset") {
  if (have_vulkan()) test::check_verify_finds_changed_byte("vulkan:0");
}

TEST_CASE("vulkan: a file truncated after a zero-copy load — verify and read-back are errors, never a signal") {
  if (have_vulkan()) test::check_truncation_after_load("vulkan:0");
}

TEST_CASE("vulkan: sparse TFLite tensors, stored and densified, equal to the independent reader's") {
  if (!have_vulkan()) return;
  const auto device = open_device("vulkan:0");
  const auto model = test::testdata() / "tflite" / "face_detection_full_range_sparse.tflite";
  for (const bool densify : {false, true}) {
    CAPTURE(densify);
    OpenOptions options;
    options.densify = densify;
    const Manifest manifest = open_manifest(model, options);
    const Weights weights = load(manifest, *device);
    CHECK(test::check_against_reference(model, "tflite", manifest, weights, densify ? "--densify" : "") == 188);
    CHECK(verify(weights).tensors == 188);
  }
  // The CLI's flag, under the validation layer.
  if (!test::have_exe() || !have_validation_layer()) return;
  int status = -1;
  const std::string out = load_validated(model, "--densify", &status);
  INFO(out);
  CHECK(status == 0);
  CHECK(out.find("verify: ok, 188 tensors") != std::string::npos);
  CHECK(out.find("VUID") == std::string::npos);
}

TEST_CASE("vulkan: a declined import falls back to direct with the reason; regions stay under max_alloc") {
  if (!have_vulkan() || !test::have_exe() || !have_validation_layer()) return;
  test::TempDir dir;
  const auto model = write_synth(dir, "gguf", 32);
  int status = -1;
  std::string out = load_validated(model, "--verbose", &status);
  CHECK(status == 0);
  CHECK(out.find("via vk_host_import (vk_buffer)") != std::string::npos);
  // A device that declines every import (RADV declines file-backed pages): direct, with the reason.
  {
    test::FaultyDevice declining(open_device("vulkan:0"));
    declining.decline_import = true;
    const Weights w = load(open_manifest(model), declining);
    CHECK(w.plan().count(Placement::direct) == 12);
    CHECK(w.plan().tensors[0].reason.find(
              "at load: the device declined the import: test device declines every import") != std::string::npos);
    CHECK(verify(w).tensors == 12);
  }

  // 12 × 2 MiB tensors, imports of at most 5 MiB: several regions, each verified through its import.
  DeviceOverrides small;
  small.max_alloc = 5 << 20;
  auto device = open_device("vulkan:0", small);
  const Manifest manifest = open_manifest(model);
  const Weights weights = load(manifest, *device);
  CHECK(weights.plan().count(Placement::zero_copy) == 12);
  CHECK(weights.plan().regions.size() >= 6);
  for (const ImportRegion& r : weights.plan().regions) CHECK(r.length <= small.max_alloc.value());
  for (const TensorHandle& t : weights.tensors()) {
    const auto vk = vulkan_tensor(t);
    REQUIRE(vk);
    CHECK(vk->buffer != VK_NULL_HANDLE);
    CHECK(vk->offset == t.offset);
  }
  CHECK(verify(weights).tensors == 12);
}

TEST_CASE(
    "vulkan: an application's own objects, handed over as a VulkanContext, one by one or in C, are loaded into and "
    "left alive") {
  if (!have_vulkan() || !have_validation_layer()) return;
  test::TempDir dir;
  const auto model = write_synth(dir, "safetensors", 0, 4 << 20, 6);
  AppVulkan app;
  const VulkanContext& vk = app.context;
  const auto load_verified = [&](Device& device, Placement placement) {
    CAPTURE(placement_name(placement));
    LoadOptions options;
    options.plan.force = placement;
    options.plan.staging_budget = 1 << 20;  // four 256 KiB slots, reused
    const Weights weights = load(open_manifest(model), device, options);
    CHECK(weights.plan().count(placement) == 6);
    CHECK(verify(weights).tensors == 6);
  };
  const bool imports = open_vulkan_device(vk)->info().caps.import_host_ptr;
  for (const Placement placement : {Placement::zero_copy, Placement::direct, Placement::staged}) {
    if (placement == Placement::zero_copy && !imports) continue;
    load_verified(*open_vulkan_device(vk), placement);
    load_verified(*open_vulkan_device(vk.instance, vk.physical, vk.device, vk.queue_family), placement);
  }

  lwload_error* error = nullptr;
  lwload_device* device = lwload_device_from_vulkan(vk.instance, vk.physical, vk.device, vk.queue_family, &error);
  REQUIRE_MESSAGE(device, lwload_error_message(error));
  CHECK(std::string_view(lwload_device_id(device)) == "vulkan:0");
  lwload_manifest* manifest = lwload_manifest_open(model.c_str(), &error);
  REQUIRE_MESSAGE(manifest, lwload_error_message(error));
  lwload_load_options* options = lwload_load_options_new();
  REQUIRE(lwload_load_options_set(options, "placement", "staged", &error) == LWLOAD_OK);
  REQUIRE(lwload_load_options_set(options, "budget", "1MiB", &error) == LWLOAD_OK);
  lwload_weights* weights = lwload_load(manifest, device, options, &error);
  REQUIRE_MESSAGE(weights, lwload_error_message(error));
  CHECK(lwload_weights_tensor_count(weights) == 6);
  for (std::size_t i = 0; i < lwload_weights_tensor_count(weights); ++i) {
    lwload_tensor_handle t{};
    t.struct_size = sizeof t;
    REQUIRE(lwload_weights_tensor(weights, i, &t, &error) == LWLOAD_OK);
    CHECK(std::string_view(t.placement) == "staged");
  }
  CHECK_MESSAGE(lwload_weights_verify(weights, &error) == LWLOAD_OK, lwload_error_message(error));
  lwload_weights_free(weights);
  lwload_load_options_free(options);
  lwload_manifest_free(manifest);
  lwload_device_free(device);

  // lwload destroyed none of them: the device still runs work, the queue included.
  VkQueue queue = VK_NULL_HANDLE;
  vkGetDeviceQueue(vk.device, vk.queue_family, 0, &queue);
  CHECK(vkQueueWaitIdle(queue) == VK_SUCCESS);
  CHECK(vkDeviceWaitIdle(vk.device) == VK_SUCCESS);
  CHECK(app.reports == 0);
}

TEST_CASE("vulkan: discovery reports the limits the planner needs") {
  if (!have_vulkan()) return;
  const DeviceInfo d = BackendRegistry::instance().find("vulkan")->devices().at(0);
  CHECK(d.id() == "vulkan:0");
  CHECK(d.caps.max_alloc > 0);
  CHECK(d.caps.max_shader_binding > 0);
  if (d.memory == MemoryModel::unified && d.caps.import_host_ptr) {
    CHECK(d.caps.import_alignment >= 1);
    CHECK(d.caps.size_multiple == d.caps.import_alignment);
  }
}

TEST_CASE("vulkan: read_back and view out of range give the one error every backend gives") {
  if (!have_vulkan()) return;
  test::TempDir dir;
  CHECK(test::check_device_ranges(*open_device("vulkan:0"), dir.path()) >= 1);
}

TEST_CASE("vulkan: on unified memory, host imports are held to what the heap's budget has left") {
  if (!have_vulkan()) return;
  // Imported pages count against the same heap as the device's allocations: the budget
  // VK_EXT_memory_budget reports left is the import limit too, so the planner declines past it.
  const DeviceInfo d = BackendRegistry::instance().find("vulkan")->devices().at(0);
  if (d.memory != MemoryModel::unified || !d.caps.import_host_ptr) {
    MESSAGE("vulkan:0 does not import host memory on unified memory: nothing to hold");
    return;
  }
  if (d.caps.memory_available == 0) {
    MESSAGE("vulkan:0 reports no memory budget (no VK_EXT_memory_budget): no import limit follows");
    CHECK(d.caps.import_limit == 0);
    return;
  }
  CHECK(d.caps.import_limit == d.caps.memory_available);
}

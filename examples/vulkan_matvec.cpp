// vulkan_matvec: an application with its own Vulkan instance and device hands them to lwload,
// loads a model (zero_copy on unified devices: the weights are the file's pages imported as
// VkDeviceMemory), and runs a compute shader (GLSL compiled by glslc at build time) on one loaded
// weight matrix where lwload put it — its VkBuffer and offset — then checks y = W x against the CPU.
//
//   vulkan_matvec [--placement auto|zero-copy|direct|staged]
//
// It writes its own small packed safetensors (the weight sits at an unaligned offset after another
// tensor, as in real files) and removes it. Exit status 0 when the device agrees with the CPU.
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "lwload/lwload.hpp"
#include "lwload/vulkan.hpp"

namespace {

constexpr std::uint32_t kShader[] =
#include "vulkan_matvec.spv.inc"
    ;

constexpr std::uint32_t kRows = 96, kCols = 160;

[[noreturn]] void die(const std::string& what, VkResult r) {
  throw std::runtime_error(what + " failed: VkResult " + std::to_string(static_cast<int>(r)));
}
void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) die(what, r);
}

template <typename T>
T make(VkStructureType type) {
  T value{};
  value.sType = type;
  return value;
}

// Validation messages (VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation, as the test runs it): any
// warning or error fails the run.
int g_validation_messages = 0;
VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    ++g_validation_messages;
    std::cerr << "validation: " << data->pMessage << "\n";
  }
  return VK_FALSE;
}

bool has_instance_extension(const char* name) {
  std::uint32_t count = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> all(count);
  vkEnumerateInstanceExtensionProperties(nullptr, &count, all.data());
  for (const auto& e : all)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// The application's side of Vulkan: instance, device and compute queue family (what it hands
// lwload), the queue, and its own small buffers.
struct App {
  lwload::VulkanContext vulkan;
  VkQueue queue = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;

  App() {
    auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.apiVersion = VK_API_VERSION_1_1;
    auto info = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.pApplicationInfo = &app;
    const char* debug_utils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    const bool debug = has_instance_extension(debug_utils);
    if (debug) {
      info.enabledExtensionCount = 1;
      info.ppEnabledExtensionNames = &debug_utils;
    }
    check(vkCreateInstance(&info, nullptr, &vulkan.instance), "vkCreateInstance");
    if (debug) {
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(vulkan.instance, "vkCreateDebugUtilsMessengerEXT"));
      auto messenger_info =
          make<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
      messenger_info.messageSeverity =
          VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      messenger_info.pfnUserCallback = on_message;
      if (create)
        check(create(vulkan.instance, &messenger_info, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
    }
    std::uint32_t count = 1;
    const VkResult r = vkEnumeratePhysicalDevices(vulkan.instance, &count, &vulkan.physical);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) die("vkEnumeratePhysicalDevices", r);
    std::uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vulkan.physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(vulkan.physical, &families, props.data());
    std::uint32_t& family = vulkan.queue_family;
    while (family < families && !(props[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
    const float priority = 1.0f;
    auto queue_info = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queue_info.queueFamilyIndex = vulkan.queue_family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    // The extension lwload imports file pages with; an app that leaves it out gets direct placement.
    const char* extension = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    auto device_info = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    device_info.enabledExtensionCount = 1;
    device_info.ppEnabledExtensionNames = &extension;
    check(vkCreateDevice(vulkan.physical, &device_info, nullptr, &vulkan.device), "vkCreateDevice");
    vkGetDeviceQueue(vulkan.device, vulkan.queue_family, 0, &queue);
    vkGetPhysicalDeviceMemoryProperties(vulkan.physical, &memory);
  }
  ~App() {
    vkDestroyDevice(vulkan.device, nullptr);
    if (messenger) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(vulkan.instance, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy) destroy(vulkan.instance, messenger, nullptr);
    }
    vkDestroyInstance(vulkan.instance, nullptr);
  }
};

// A host-visible storage buffer the app owns (x and y).
struct HostBuffer {
  const App& app;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  float* data = nullptr;

  HostBuffer(const App& a, std::size_t floats) : app(a) {
    auto info = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    info.size = floats * sizeof(float);
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    check(vkCreateBuffer(app.vulkan.device, &info, nullptr, &buffer), "vkCreateBuffer");
    VkMemoryRequirements needs{};
    vkGetBufferMemoryRequirements(app.vulkan.device, buffer, &needs);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    std::uint32_t type = 0;
    while (type < app.memory.memoryTypeCount &&
           (!(needs.memoryTypeBits & (1u << type)) || (app.memory.memoryTypes[type].propertyFlags & want) != want))
      ++type;
    auto alloc = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    alloc.allocationSize = needs.size;
    alloc.memoryTypeIndex = type;
    check(vkAllocateMemory(app.vulkan.device, &alloc, nullptr, &memory), "vkAllocateMemory");
    check(vkBindBufferMemory(app.vulkan.device, buffer, memory, 0), "vkBindBufferMemory");
    void* mapped = nullptr;
    check(vkMapMemory(app.vulkan.device, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
    data = static_cast<float*>(mapped);
  }
  ~HostBuffer() {
    vkDestroyBuffer(app.vulkan.device, buffer, nullptr);
    vkFreeMemory(app.vulkan.device, memory, nullptr);
  }
};

// A packed safetensors (as the reference writer lays it out): "lead" [3] F32, then "w" [kRows, kCols].
std::filesystem::path write_model(const std::filesystem::path& dir, std::vector<float>& w) {
  w.resize(kRows * kCols);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  const std::size_t w_bytes = w.size() * sizeof(float);
  std::string header = R"({"lead":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"w":{"dtype":"F32","shape":[)" +
                       std::to_string(kRows) + "," + std::to_string(kCols) + R"(],"data_offsets":[12,)" +
                       std::to_string(12 + w_bytes) + "]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::uint64_t length = header.size();
  const auto path = dir / "matvec.safetensors";
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header;
  const float lead[3] = {0.5f, 0.25f, 0.125f};
  out.write(reinterpret_cast<const char*>(lead), sizeof lead);
  out.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w_bytes));
  return path;
}

int run(int argc, char** argv) {
  std::optional<lwload::Placement> placement;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--placement" && i + 1 < argc) placement = lwload::parse_placement(argv[++i]);
    else throw lwload::Error(lwload::ErrorCode::usage, std::string("unknown argument ") + argv[i]);
  }
  std::string scratch = (std::filesystem::temp_directory_path() / "lwload-vkmatvec-XXXXXX").string();
  if (!::mkdtemp(scratch.data())) throw std::runtime_error("mkdtemp failed");
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{scratch};

  std::vector<float> w;
  const auto model = write_model(scratch, w);
  App app;
  auto device = lwload::open_vulkan_device(app.vulkan);
  lwload::LoadOptions options;
  options.plan.force = placement;
  const lwload::Weights weights = lwload::load(lwload::open_manifest(model), *device, options);
  const lwload::TensorHandle* handle = weights.find("w");
  const auto tensor = handle ? lwload::vulkan_tensor(*handle) : std::nullopt;
  if (!tensor || tensor->offset % sizeof(float) != 0) throw std::runtime_error("no usable Vulkan tensor 'w'");

  HostBuffer x(app, kCols), y(app, kRows);
  for (std::uint32_t c = 0; c < kCols; ++c) x.data[c] = static_cast<float>(c % 7) - 3.0f;

  // Pipeline: three storage buffers and the shape as push constants.
  VkDescriptorSetLayoutBinding bindings[3]{};
  for (std::uint32_t b = 0; b < 3; ++b)
    bindings[b] = {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  auto layout_info = make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  layout_info.bindingCount = 3;
  layout_info.pBindings = bindings;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  check(vkCreateDescriptorSetLayout(app.vulkan.device, &layout_info, nullptr, &set_layout),
        "vkCreateDescriptorSetLayout");
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, 3 * sizeof(std::uint32_t)};
  auto pipeline_layout_info = make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pipeline_layout_info.setLayoutCount = 1;
  pipeline_layout_info.pSetLayouts = &set_layout;
  pipeline_layout_info.pushConstantRangeCount = 1;
  pipeline_layout_info.pPushConstantRanges = &push;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  check(vkCreatePipelineLayout(app.vulkan.device, &pipeline_layout_info, nullptr, &pipeline_layout),
        "vkCreatePipelineLayout");
  auto module_info = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  module_info.codeSize = sizeof kShader;
  module_info.pCode = kShader;
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(app.vulkan.device, &module_info, nullptr, &module), "vkCreateShaderModule");
  auto pipeline_info = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  pipeline_info.stage = make<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = module;
  pipeline_info.stage.pName = "main";
  pipeline_info.layout = pipeline_layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  check(vkCreateComputePipelines(app.vulkan.device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline),
        "vkCreateComputePipelines");

  const VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
  auto pool_info = make<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  pool_info.maxSets = 1;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &pool_size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check(vkCreateDescriptorPool(app.vulkan.device, &pool_info, nullptr, &pool), "vkCreateDescriptorPool");
  auto set_info = make<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
  set_info.descriptorPool = pool;
  set_info.descriptorSetCount = 1;
  set_info.pSetLayouts = &set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(vkAllocateDescriptorSets(app.vulkan.device, &set_info, &set), "vkAllocateDescriptorSets");
  // The weight binds from the buffer's start; the shader adds the tensor's element offset, so any
  // offset works (descriptor offsets would have to meet minStorageBufferOffsetAlignment).
  const std::uint64_t w_end = tensor->offset + handle->bytes;
  const VkDescriptorBufferInfo infos[3] = {
      {tensor->buffer, 0, w_end}, {x.buffer, 0, VK_WHOLE_SIZE}, {y.buffer, 0, VK_WHOLE_SIZE}};
  VkWriteDescriptorSet writes[3]{};
  for (std::uint32_t b = 0; b < 3; ++b) {
    writes[b] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[b].dstSet = set;
    writes[b].dstBinding = b;
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
  }
  vkUpdateDescriptorSets(app.vulkan.device, 3, writes, 0, nullptr);

  auto command_pool_info = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  command_pool_info.queueFamilyIndex = app.vulkan.queue_family;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  check(vkCreateCommandPool(app.vulkan.device, &command_pool_info, nullptr, &command_pool), "vkCreateCommandPool");
  auto command_info = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  command_info.commandPool = command_pool;
  command_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  command_info.commandBufferCount = 1;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(app.vulkan.device, &command_info, &commands), "vkAllocateCommandBuffers");
  auto begin = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout, 0, 1, &set, 0, nullptr);
  const std::uint32_t shape[3] = {static_cast<std::uint32_t>(tensor->offset / sizeof(float)), kRows, kCols};
  vkCmdPushConstants(commands, pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof shape, shape);
  vkCmdDispatch(commands, (kRows + 63) / 64, 1, 1);
  check(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
  auto submit = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  check(vkQueueSubmit(app.queue, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit");
  check(vkQueueWaitIdle(app.queue), "vkQueueWaitIdle");

  double worst = 0;
  for (std::uint32_t r = 0; r < kRows; ++r) {
    double expected = 0;
    for (std::uint32_t c = 0; c < kCols; ++c) expected += static_cast<double>(w[r * kCols + c]) * x.data[c];
    worst = std::max(worst, std::abs(expected - y.data[r]));
  }
  vkDestroyCommandPool(app.vulkan.device, command_pool, nullptr);
  vkDestroyDescriptorPool(app.vulkan.device, pool, nullptr);
  vkDestroyPipeline(app.vulkan.device, pipeline, nullptr);
  vkDestroyShaderModule(app.vulkan.device, module, nullptr);
  vkDestroyPipelineLayout(app.vulkan.device, pipeline_layout, nullptr);
  vkDestroyDescriptorSetLayout(app.vulkan.device, set_layout, nullptr);

  std::cout << "vulkan_matvec: tensor 'w' " << kRows << "x" << kCols << " F32, placement "
            << lwload::placement_name(handle->placement) << " (" << handle->mechanism << "), offset " << tensor->offset
            << " in its VkBuffer; " << kRows << " rows agree with the CPU (max |difference| " << worst << ")\n";
  if (g_validation_messages > 0) std::cerr << "vulkan_matvec: " << g_validation_messages << " validation messages\n";
  return worst < 1e-3 && g_validation_messages == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return example::run_main("vulkan_matvec", [&] { return run(argc, argv); });
}

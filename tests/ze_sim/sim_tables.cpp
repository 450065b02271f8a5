// TEST DOUBLE (see sim.hpp): the DDI table exports the Level Zero loader looks up in a driver.
// Loader 1.8 resolves every zeGet*/zetGet*/zesGet*ProcAddrTable symbol of the driver library, so
// all of them exist here. Tables the simulation does not implement are left with null entries
// (the loader answers calls to those with an error) and report ZE_RESULT_SUCCESS, because the
// loader drops a driver whose core table getters fail.
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "sim.hpp"

using namespace ze_sim;

namespace {
ze_result_t check_version(ze_api_version_t version, const void* table) {
  if (table == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  return ZE_RESULT_SUCCESS;
}
}  // namespace

extern "C" {

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t v, ze_global_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnInit = sim_zeInit;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t v, ze_driver_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnGet = sim_zeDriverGet;
  t->pfnGetApiVersion = sim_zeDriverGetApiVersion;
  t->pfnGetProperties = sim_zeDriverGetProperties;
  t->pfnGetIpcProperties = sim_zeDriverGetIpcProperties;
  t->pfnGetExtensionProperties = sim_zeDriverGetExtensionProperties;
  t->pfnGetExtensionFunctionAddress = sim_zeDriverGetExtensionFunctionAddress;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t v, ze_device_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnGet = sim_zeDeviceGet;
  t->pfnGetSubDevices = sim_zeDeviceGetSubDevices;
  t->pfnGetProperties = sim_zeDeviceGetProperties;
  t->pfnGetMemoryProperties = sim_zeDeviceGetMemoryProperties;
  t->pfnGetCommandQueueGroupProperties = sim_zeDeviceGetCommandQueueGroupProperties;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetContextProcAddrTable(ze_api_version_t v, ze_context_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = sim_zeContextCreate;
  t->pfnDestroy = sim_zeContextDestroy;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandListProcAddrTable(ze_api_version_t v, ze_command_list_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreateImmediate = sim_zeCommandListCreateImmediate;
  t->pfnDestroy = sim_zeCommandListDestroy;
  t->pfnAppendMemoryCopy = sim_zeCommandListAppendMemoryCopy;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventPoolProcAddrTable(ze_api_version_t v, ze_event_pool_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = sim_zeEventPoolCreate;
  t->pfnDestroy = sim_zeEventPoolDestroy;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventProcAddrTable(ze_api_version_t v, ze_event_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = sim_zeEventCreate;
  t->pfnDestroy = sim_zeEventDestroy;
  t->pfnHostSignal = sim_zeEventHostSignal;
  t->pfnHostSynchronize = sim_zeEventHostSynchronize;
  t->pfnQueryStatus = sim_zeEventQueryStatus;
  t->pfnHostReset = sim_zeEventHostReset;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetMemProcAddrTable(ze_api_version_t v, ze_mem_dditable_t* t) {
  if (auto r = check_version(v, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnAllocHost = sim_zeMemAllocHost;
  t->pfnAllocDevice = sim_zeMemAllocDevice;
  t->pfnFree = sim_zeMemFree;
  t->pfnGetAllocProperties = sim_zeMemGetAllocProperties;
  return ZE_RESULT_SUCCESS;
}

// Tables the simulation leaves empty.
#define LWLOAD_ZE_SIM_EMPTY_TABLE(getter, table_type) \
  ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t v, table_type* t) { return check_version(v, t); }

LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
LWLOAD_ZE_SIM_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

}  // extern "C"

// The whole C++ API in one include: manifests, devices and backends, planning, loading.
#pragma once

#include "lwload/backend.hpp"
#include "lwload/device.hpp"
#include "lwload/dtype.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"
#include "lwload/manifest_json.hpp"
#include "lwload/memory_file_system.hpp"
#include "lwload/plan.hpp"
#include "lwload/version.hpp"

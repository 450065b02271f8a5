// The one place the OpenCL C++ bindings are configured and included: every file of the backend
// (and the examples) includes this instead of <CL/opencl.hpp>, so they all agree on the target
// version. Exceptions stay off: each call's status is checked by check.hpp, which names the
// call and the error code in the lwload::Error it throws.
#pragma once

#include "backends/opencl/layer.hpp"

#ifndef CL_HPP_TARGET_OPENCL_VERSION
#define CL_HPP_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_HPP_MIN_REQUIRED_OPENCL_VERSION
#define CL_HPP_MIN_REQUIRED_OPENCL_VERSION 120
#endif

#if defined(__GNUC__)
#pragma GCC diagnostic push
// The Khronos headers use deprecated 1.x entry points behind their own version checks.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif
#include <CL/opencl.hpp>
#include <CL/cl_ext.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

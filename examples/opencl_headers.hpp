// How the examples include the OpenCL C++ bindings (the official Khronos CL/opencl.hpp from
// Debian's opencl-clhpp-headers): target OpenCL 3.0, accept 1.2 devices, and keep the headers'
// own deprecation warnings quiet so the examples build with -Werror.
#pragma once

#define CL_HPP_TARGET_OPENCL_VERSION 300
#define CL_HPP_MIN_REQUIRED_OPENCL_VERSION 120
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif
#include <CL/opencl.hpp>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

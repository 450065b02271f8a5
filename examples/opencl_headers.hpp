// How the examples include the OpenCL C++ bindings (the official Khronos CL/opencl.hpp from
// Debian's opencl-clhpp-headers): target OpenCL 3.0 and accept 1.2 devices. The bindings call
// deprecated 1.x entry points behind their own version checks; treating this header as a system
// header keeps those warnings theirs, so the examples build with -Werror.
#pragma once
#pragma GCC system_header

#define CL_HPP_TARGET_OPENCL_VERSION 300
#define CL_HPP_MIN_REQUIRED_OPENCL_VERSION 120
#include <CL/opencl.hpp>

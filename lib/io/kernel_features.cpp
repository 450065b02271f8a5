#include "io/kernel_features.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 uapi; older headers lack the name, the kernel decides
#endif
#ifndef __NR_cachestat
#define __NR_cachestat 451  // Linux 6.5; the same number on every architecture (unified table)
#endif

namespace lwload::io {
namespace {

KernelFeature from(long result) {
  if (result == 0) return {true, 0};
  return {false, errno};
}

}  // namespace

std::string KernelFeature::refusal() const {
  if (available) return {};
  switch (error) {
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    default: return std::strerror(error);
  }
}

const KernelFeature& populate_read() {
  // A zero-length range at a page-aligned address: the kernel checks the advice before the range,
  // so this answers EINVAL where the advice is unknown (or a filter refuses it) and 0 otherwise.
  static const KernelFeature feature = [] {
    const long page = ::sysconf(_SC_PAGESIZE);
    static const char probe = 0;
    const auto aligned = reinterpret_cast<std::uintptr_t>(&probe) / static_cast<std::uintptr_t>(page) *
                         static_cast<std::uintptr_t>(page);
    return from(::madvise(reinterpret_cast<void*>(aligned), 0, MADV_POPULATE_READ));
  }();
  return feature;
}

const KernelFeature& cachestat() {
  // No descriptor: a kernel with the call answers EBADF, one without (or a filter) ENOSYS / EPERM.
  static const KernelFeature feature = [] {
    if (::syscall(__NR_cachestat, -1, nullptr, nullptr, 0) == 0 || errno == EBADF || errno == EFAULT)
      return KernelFeature{true, 0};
    return KernelFeature{false, errno};
  }();
  return feature;
}

const KernelFeature& vm_readv() {
  static const KernelFeature feature = [] {
    const char from_byte = 1;
    char to_byte = 0;
    iovec local{&to_byte, 1};
    iovec remote{const_cast<char*>(&from_byte), 1};
    const ssize_t got = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    return got == 1 ? KernelFeature{true, 0} : KernelFeature{false, errno};
  }();
  return feature;
}

}  // namespace lwload::io

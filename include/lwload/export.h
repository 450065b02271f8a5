/* LWLOAD_API marks what liblwload exports: the C API (lwload.h) and the public C++ API. The
 * library is built with hidden visibility, so everything else (internals, Boost) stays inside. */
#ifndef LWLOAD_EXPORT_H
#define LWLOAD_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define LWLOAD_API __attribute__((visibility("default")))
#else
#define LWLOAD_API
#endif

#endif /* LWLOAD_EXPORT_H */

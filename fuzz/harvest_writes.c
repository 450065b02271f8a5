// An LD_PRELOAD library for scripts/check/fuzz-corpus.sh: every small regular file a test process (or
// a child: the Python writers, the CLI) closes after writing is copied into a harvest folder, so
// the cases the suites write into their scratch folders (and delete again) become candidate fuzz
// inputs. Every version is kept: a test that rewrites one path case after case leaves each case.
//
//   LWLOAD_HARVEST_DIR    the folder copies go to, named <size>-<64-bit FNV-1a of the bytes>
//   LWLOAD_HARVEST_UNDER  colon-separated path prefixes; files elsewhere are left alone
//   LWLOAD_HARVEST_MAX    largest file copied, in bytes (default 65536)
//
// close() and fclose() are wrapped (libstdc++'s ofstream closes through fclose, which glibc does
// not route through close()). A file still open for writing when its process ends is missed.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*real_close)(int);
static int (*real_fclose)(FILE*);

static int under_prefixes(const char* path) {
  const char* prefixes = getenv("LWLOAD_HARVEST_UNDER");
  if (!prefixes) return 0;
  for (const char* p = prefixes; *p;) {
    const char* end = strchr(p, ':');
    const size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 && strncmp(path, p, n) == 0 && (path[n] == '/' || path[n] == '\0')) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

static void harvest(int fd) {
  const char* out = getenv("LWLOAD_HARVEST_DIR");
  if (!out || fd < 0) return;
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) return;
  struct stat st;
  const char* max_env = getenv("LWLOAD_HARVEST_MAX");
  const long long max = max_env ? atoll(max_env) : 65536;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > max) return;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(link, path, sizeof path - 1);
  if (len <= 0) return;
  path[len] = '\0';
  if (!under_prefixes(path)) return;
  // A second open file description, for reading: the written one may be O_WRONLY.
  const int in = open(link, O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  const size_t size = (size_t)st.st_size;
  unsigned char* bytes = malloc(size);
  size_t got = 0;
  while (bytes && got < size) {
    const ssize_t n = pread(in, bytes + got, size - got, (off_t)got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  real_close(in);
  if (bytes && got == size) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    char name[4096];
    snprintf(name, sizeof name, "%s/%zu-%016llx", out, size, (unsigned long long)h);
    const int copy = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (copy >= 0) {
      for (size_t done = 0; done < size;) {
        const ssize_t n = write(copy, bytes + done, size - done);
        if (n <= 0) break;
        done += (size_t)n;
      }
      real_close(copy);
    }
  }
  free(bytes);
}

int close(int fd) {
  if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  harvest(fd);
  return real_close(fd);
}

int fclose(FILE* f) {
  if (!real_fclose) real_fclose = (int (*)(FILE*))dlsym(RTLD_NEXT, "fclose");
  if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  if (f) {
    fflush(f);
    harvest(fileno(f));
  }
  return real_fclose(f);
}

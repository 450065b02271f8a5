// Runs a command under a seccomp filter that refuses the kernel features older kernels and app
// sandboxes lack, the way those refuse them, so the test suites run against each fallback here:
//   refuse REFUSAL[,REFUSAL...] -- COMMAND [ARGS...]
// REFUSAL: populate        madvise(MADV_POPULATE_READ / _WRITE) -> EINVAL (Linux before 5.14)
//          cachestat       cachestat -> ENOSYS (before 6.5)
//          io_uring_eperm  io_uring_setup -> EPERM (Android's and Docker's seccomp policies)
//          io_uring_enosys io_uring_setup -> ENOSYS (built without io_uring)
//          vm_readv        process_vm_readv -> EPERM (sandboxes)
//          openat2         openat2 -> ENOSYS (before 5.6)
//          openat2_eperm   openat2 -> EPERM (older container seccomp profiles, which predate it)
//          all             every one of these (io_uring as EPERM)
// Everything else is allowed. The command learns what is refused from LWLOAD_REFUSED (the list as
// given), so a suite can check that the refusal is really in force.
#define _GNU_SOURCE  // strdup, strtok_r, setenv, execvp under -std=c11
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MADV_POPULATE_READ_ 22  // Linux 5.14 uapi
#define MADV_POPULATE_WRITE_ 23
#ifndef __NR_cachestat
#define __NR_cachestat 451  // Linux 6.5; the same number on every architecture
#endif

static void add(scmp_filter_ctx ctx, int error, int syscall, unsigned count, const struct scmp_arg_cmp* arg) {
  const int rc = count ? seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(error), syscall, count, arg)
                       : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(error), syscall, 0);
  if (rc != 0) {
    fprintf(stderr, "refuse: seccomp_rule_add(%d): %s\n", syscall, strerror(-rc));
    exit(125);
  }
}

static int refuse(scmp_filter_ctx ctx, const char* what) {
  const int all = strcmp(what, "all") == 0;
  int known = all;
  if (all || strcmp(what, "populate") == 0) {
    const struct scmp_arg_cmp read = SCMP_A2(SCMP_CMP_EQ, MADV_POPULATE_READ_);
    const struct scmp_arg_cmp write = SCMP_A2(SCMP_CMP_EQ, MADV_POPULATE_WRITE_);
    add(ctx, EINVAL, SCMP_SYS(madvise), 1, &read);
    add(ctx, EINVAL, SCMP_SYS(madvise), 1, &write);
    known = 1;
  }
  if (all || strcmp(what, "cachestat") == 0) {
    add(ctx, ENOSYS, __NR_cachestat, 0, NULL);
    known = 1;
  }
  if (all || strcmp(what, "io_uring_eperm") == 0) {
    add(ctx, EPERM, SCMP_SYS(io_uring_setup), 0, NULL);
    known = 1;
  }
  if (strcmp(what, "io_uring_enosys") == 0) {
    add(ctx, ENOSYS, SCMP_SYS(io_uring_setup), 0, NULL);
    known = 1;
  }
  if (all || strcmp(what, "vm_readv") == 0) {
    add(ctx, EPERM, SCMP_SYS(process_vm_readv), 0, NULL);
    known = 1;
  }
  if (all || strcmp(what, "openat2") == 0) {
    add(ctx, ENOSYS, SCMP_SYS(openat2), 0, NULL);
    known = 1;
  }
  if (strcmp(what, "openat2_eperm") == 0) {
    add(ctx, EPERM, SCMP_SYS(openat2), 0, NULL);
    known = 1;
  }
  return known;
}

int main(int argc, char** argv) {
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: refuse REFUSAL[,REFUSAL...] -- COMMAND [ARGS...]\n");
    return 125;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    fprintf(stderr, "refuse: seccomp_init failed\n");
    return 125;
  }
  char* list = strdup(argv[1]);
  for (char* save = NULL, *what = strtok_r(list, ",", &save); what; what = strtok_r(NULL, ",", &save)) {
    if (!refuse(ctx, what)) {
      fprintf(stderr, "refuse: unknown refusal '%s'\n", what);
      return 125;
    }
  }
  free(list);
  if (setenv("LWLOAD_REFUSED", argv[1], 1) != 0) return 125;
  const int rc = seccomp_load(ctx);  // sets no_new_privs first, so no privilege is needed
  if (rc != 0) {
    fprintf(stderr, "refuse: seccomp_load: %s\n", strerror(-rc));
    return 125;
  }
  seccomp_release(ctx);
  execvp(argv[3], argv + 3);
  fprintf(stderr, "refuse: %s: %s\n", argv[3], strerror(errno));
  return 127;
}

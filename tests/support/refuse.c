// Runs a command under a seccomp filter that refuses the kernel features older kernels and app
// sandboxes lack, the way those refuse them, so the test suites run against each fallback here:
//   refuse [--at-most N] REFUSAL[,REFUSAL...] -- COMMAND [ARGS...]
// REFUSAL: populate        madvise(MADV_POPULATE_READ / _WRITE) -> EINVAL (Linux before 5.14)
//          cachestat       cachestat -> ENOSYS (before 6.5)
//          io_uring_eperm  io_uring_setup -> EPERM (Android's and Docker's seccomp policies)
//          io_uring_enosys io_uring_setup -> ENOSYS (built without io_uring)
//          vm_readv        process_vm_readv -> EPERM (sandboxes)
//          openat2         openat2 -> ENOSYS (before 5.6)
//          openat2_eperm   openat2 -> EPERM (older container seccomp profiles, which predate it)
//          all             every one of these (io_uring as EPERM)
//          none            nothing: the launcher and its filter alone (a benchmark's baseline)
// Everything else is allowed. The command learns what is refused from LWLOAD_REFUSED (the list as
// given), so a suite can check that the refusal is really in force.
//
// --at-most N: the refusals are answered by this launcher instead of by the filter (seccomp user
// notification: the command's call waits while the launcher counts it and answers with the same
// error), and each refused call — madvise per advice — is counted over the command's whole process
// tree. When the command ends, the counts go to stderr, and the exit status is 1 if any refused call
// was made more than N times (else the command's own): how a suite shows that a refusal is
// discovered once per process, not once per load.
#define _GNU_SOURCE  // strdup, strtok_r, setenv, execvp under -std=c11
#include <errno.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MADV_POPULATE_READ_ 22  // Linux 5.14 uapi
#define MADV_POPULATE_WRITE_ 23
#ifndef __NR_cachestat
#define __NR_cachestat 451  // Linux 6.5; the same number on every architecture
#endif

// What each refused call is answered with, and (--at-most) how often it was made.
struct Refused {
  int syscall;
  long advice;  // madvise's advice, -1 for other calls
  int error;
  const char* name;
  unsigned long calls;
};
static struct Refused refused[16];
static size_t refused_count;
static int counting;  // --at-most given: answered by the launcher, counted

static void add(scmp_filter_ctx ctx, int error, int syscall, long advice, const char* name) {
  const struct scmp_arg_cmp arg = SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)advice, 0);  // datum_b unused by EQ
  const uint32_t action = counting ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(error);
  const int rc =
      advice >= 0 ? seccomp_rule_add_array(ctx, action, syscall, 1, &arg) : seccomp_rule_add(ctx, action, syscall, 0);
  if (rc != 0) {
    fprintf(stderr, "refuse: seccomp_rule_add(%s): %s\n", name, strerror(-rc));
    exit(125);
  }
  if (refused_count == sizeof refused / sizeof refused[0]) {
    fprintf(stderr, "refuse: too many refusals\n");
    exit(125);
  }
  refused[refused_count++] = (struct Refused){syscall, advice, error, name, 0};
}

static int refuse(scmp_filter_ctx ctx, const char* what) {
  const int all = strcmp(what, "all") == 0;
  int known = all || strcmp(what, "none") == 0;
  if (all || strcmp(what, "populate") == 0) {
    add(ctx, EINVAL, SCMP_SYS(madvise), MADV_POPULATE_READ_, "madvise(MADV_POPULATE_READ)");
    add(ctx, EINVAL, SCMP_SYS(madvise), MADV_POPULATE_WRITE_, "madvise(MADV_POPULATE_WRITE)");
    known = 1;
  }
  if (all || strcmp(what, "cachestat") == 0) {
    add(ctx, ENOSYS, __NR_cachestat, -1, "cachestat");
    known = 1;
  }
  if (all || strcmp(what, "io_uring_eperm") == 0) {
    add(ctx, EPERM, SCMP_SYS(io_uring_setup), -1, "io_uring_setup");
    known = 1;
  }
  if (strcmp(what, "io_uring_enosys") == 0) {
    add(ctx, ENOSYS, SCMP_SYS(io_uring_setup), -1, "io_uring_setup");
    known = 1;
  }
  if (all || strcmp(what, "vm_readv") == 0) {
    add(ctx, EPERM, SCMP_SYS(process_vm_readv), -1, "process_vm_readv");
    known = 1;
  }
  if (all || strcmp(what, "openat2") == 0) {
    add(ctx, ENOSYS, SCMP_SYS(openat2), -1, "openat2");
    known = 1;
  }
  if (strcmp(what, "openat2_eperm") == 0) {
    add(ctx, EPERM, SCMP_SYS(openat2), 0, NULL);
    known = 1;
  }
  return known;
}

// Answers the command's refused calls, counting them, until it exits; returns its exit status.
static int supervise(int listener, pid_t child) {
  struct seccomp_notif* req = NULL;
  struct seccomp_notif_resp* resp = NULL;
  if (seccomp_notify_alloc(&req, &resp) != 0) {
    fprintf(stderr, "refuse: seccomp_notify_alloc failed\n");
    kill(child, SIGKILL);
    return 125;
  }
  for (;;) {
    int status;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      seccomp_notify_free(req, resp);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    struct pollfd p = {listener, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0 || !(p.revents & POLLIN)) continue;
    memset(req, 0, sizeof *req);                               // the kernel insists on a zeroed request
    if (seccomp_notify_receive(listener, req) != 0) continue;  // the caller went away meanwhile
    struct Refused* match = NULL;
    for (size_t i = 0; i < refused_count && !match; ++i)
      if (refused[i].syscall == req->data.nr && (refused[i].advice < 0 || (long)req->data.args[2] == refused[i].advice))
        match = &refused[i];
    memset(resp, 0, sizeof *resp);
    resp->id = req->id;
    resp->error = match ? -match->error : -EPERM;
    if (match) ++match->calls;
    seccomp_notify_respond(listener, resp);  // fails only when the caller was killed meanwhile
  }
}

int main(int argc, char** argv) {
  long at_most = -1;
  if (argc > 2 && strcmp(argv[1], "--at-most") == 0) {
    char* end;
    at_most = strtol(argv[2], &end, 10);
    if (*argv[2] == '\0' || *end != '\0' || at_most < 0) {
      fprintf(stderr, "refuse: --at-most wants a count, not '%s'\n", argv[2]);
      return 125;
    }
    counting = 1;
    argc -= 2;
    argv += 2;
  }
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: refuse [--at-most N] REFUSAL[,REFUSAL...] -- COMMAND [ARGS...]\n");
    return 125;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    fprintf(stderr, "refuse: seccomp_init failed\n");
    return 125;
  }
  char* list = strdup(argv[1]);
  for (char *save = NULL, *what = strtok_r(list, ",", &save); what; what = strtok_r(NULL, ",", &save)) {
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
  if (!counting) {
    seccomp_release(ctx);
    execvp(argv[3], argv + 3);
    fprintf(stderr, "refuse: %s: %s\n", argv[3], strerror(errno));
    return 127;
  }
  // The launcher stays under the filter too, as the parent that answers: it makes none of the
  // refused calls itself.
  const int listener = seccomp_notify_fd(ctx);
  if (listener < 0) {
    fprintf(stderr, "refuse: seccomp_notify_fd: %s\n", strerror(-listener));
    return 125;
  }
  const pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "refuse: fork: %s\n", strerror(errno));
    return 125;
  }
  if (child == 0) {
    close(listener);
    execvp(argv[3], argv + 3);
    fprintf(stderr, "refuse: %s: %s\n", argv[3], strerror(errno));
    _exit(127);
  }
  int status = supervise(listener, child);
  for (size_t i = 0; i < refused_count; ++i) {
    // A syscall listed twice (io_uring as EPERM and ENOSYS) was counted on its first entry.
    int repeated = 0;
    for (size_t j = 0; j < i; ++j) repeated |= strcmp(refused[j].name, refused[i].name) == 0;
    if (repeated) continue;
    const int over = refused[i].calls > (unsigned long)at_most;
    fprintf(stderr, "refuse: %s refused %lu time%s%s\n", refused[i].name, refused[i].calls,
            refused[i].calls == 1 ? "" : "s", over ? " (more than --at-most)" : "");
    if (over) status = 1;
  }
  seccomp_release(ctx);
  return status;
}

/* Calls each system call the sandbox's filter denies, with arguments that succeed where nothing
 * denies them, and prints `name errno` (0 = it worked). Built by the escape suite with gcc. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *name, long rc) { printf("%s %d\n", name, rc < 0 ? errno : 0); }

int main(void) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  errno = 0;
  report("io_uring_setup", syscall(SYS_io_uring_setup, 1, &p));
  report("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 1));
  report("add_key", syscall(SYS_add_key, "user", "skald-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
  report("request_key", syscall(SYS_request_key, "user", "skald-probe", NULL, 0));
  struct perf_event_attr pe;
  memset(&pe, 0, sizeof pe);
  pe.type = PERF_TYPE_SOFTWARE;
  pe.size = sizeof pe;
  pe.config = PERF_COUNT_SW_TASK_CLOCK;
  pe.exclude_kernel = 1;
  report("perf_event_open", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
  report("userfaultfd", syscall(SYS_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */));
  report("bpf", syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
  report("mount", mount("none", "/proc/self/skald-nonexistent", "tmpfs", 0, NULL));
  report("umount2", umount2("/proc/self/skald-nonexistent", 0));
  report("pivot_root", syscall(SYS_pivot_root, "/proc/self/skald-nonexistent", "/proc/self/skald-nonexistent"));
  report("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
  report("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
  report("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
  report("setns", syscall(SYS_setns, 0, 0));
  long c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  if (c == 0) _exit(0);
  if (c > 0) waitpid(c, NULL, 0);
  report("clone(CLONE_NEWUSER)", c);
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.exit_signal = SIGCHLD;
  long c3 = syscall(SYS_clone3, &ca, sizeof ca);
  if (c3 == 0) _exit(0);
  if (c3 > 0) waitpid(c3, NULL, 0);
  report("clone3", c3);
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  long pt = ptrace(PTRACE_ATTACH, child, 0, 0);
  report("ptrace", pt);
  char buf[4], src[4] = "abc";
  struct iovec l = {buf, 3}, r = {src, 3};
  report("process_vm_readv", syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0));
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  report("personality(ADDR_NO_RANDOMIZE)", personality(ADDR_NO_RANDOMIZE));
  personality(0);
  report("init_module", syscall(SYS_init_module, NULL, 0, ""));
  report("finit_module", syscall(SYS_finit_module, -1, "", 0));
  report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
  report("ioctl(TIOCSTI)", ioctl(0, 0x5412 /* TIOCSTI */, "x"));
  /* Still allowed: an ordinary fork and a thread-like clone. */
  pid_t f = fork();
  if (f == 0) _exit(0);
  waitpid(f, NULL, 0);
  report("fork", f);
  return 0;
}

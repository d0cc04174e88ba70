/*
 * Generates the syscall filter of every sandbox (commands and stdio MCP servers) with libseccomp
 * (Debian's libseccomp-dev): `generate <arch> > <arch>.bpf`, arch = x86_64 or aarch64. The BPF is
 * checked in beside this file and loaded by bwrap (`--seccomp FD`); a test regenerates it and
 * compares the bytes. Build: gcc -O2 -o generate generate.c -lseccomp
 *
 * Default: allow. Denied with EPERM: what Docker's default profile denies a container without
 * added capabilities and that a sandboxed program has no use for — kernel keyrings, BPF, perf,
 * io_uring, userfaultfd, mounts and the new mount API, namespaces (unshare, setns, clone with any
 * CLONE_NEW* flag), ptrace and cross-process memory access, kernel modules, kexec, reboot, swap,
 * clocks, quotas, accounting, handles, NUMA policy, ioperm/iopl, personality flags that turn off
 * ASLR or make data executable, and the TIOCSTI/TIOCLINUX terminal injections. clone3 answers
 * ENOSYS (its flags are behind a pointer a filter cannot read), so libc falls back to clone, whose
 * flags are checked. Another architecture's system calls (32-bit x86 on x86_64) kill the process.
 */
#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char *const DENIED[] = {
    /* keyrings */ "add_key", "keyctl", "request_key",
    /* BPF, perf, io_uring, userfaultfd */ "bpf", "perf_event_open", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "userfaultfd",
    /* mounts and the mount API */ "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig",
    "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
    /* namespaces */ "unshare", "setns",
    /* other processes */ "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "process_madvise",
    /* the kernel */ "init_module", "finit_module", "delete_module", "create_module", "query_module",
    "get_kernel_syms", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "syslog", "_sysctl",
    "sysfs", "uselib", "ustat", "vhangup", "nfsservctl", "lookup_dcookie", "acct", "quotactl", "quotactl_fd",
    /* clocks */ "settimeofday", "stime", "clock_settime", "clock_adjtime", "adjtimex",
    /* handles, NUMA, I/O ports */ "name_to_handle_at", "open_by_handle_at", "mbind", "set_mempolicy",
    "migrate_pages", "move_pages", "ioperm", "iopl", "vm86", "vm86old",
    /* fanotify, landlock and seccomp of its own are harmless; left allowed */
};

static void rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned count,
                 const struct scmp_arg_cmp *args) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return; /* not a system call of this architecture */
  int rc = seccomp_rule_add_array(ctx, action, nr, count, args);
  if (rc != 0) {
    fprintf(stderr, "seccomp_rule_add %s: %s\n", name, strerror(-rc));
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: generate x86_64|aarch64 > filter.bpf\n");
    return 2;
  }
  uint32_t arch;
  if (strcmp(argv[1], "x86_64") == 0) arch = SCMP_ARCH_X86_64;
  else if (strcmp(argv[1], "aarch64") == 0) arch = SCMP_ARCH_AARCH64;
  else {
    fprintf(stderr, "unknown architecture %s\n", argv[1]);
    return 2;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return 1;
  /* Exactly one architecture, whatever this generator runs on; anything else kills. */
  if (seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE) != 0 || seccomp_arch_add(ctx, arch) != 0) return 1;
  if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0) return 1;
  /* Reproducible bytes: no optimisation that depends on the library's heuristics. */
  if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 1) != 0) return 1;

  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (size_t i = 0; i < sizeof DENIED / sizeof *DENIED; i++) rule(ctx, eperm, DENIED[i], 0, NULL);

  /* clone with any namespace flag (the flags are argument 0 on both architectures). */
  const uint64_t newns = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                         CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;
  for (uint64_t bit = 1; bit != 0; bit <<= 1) {
    if ((newns & bit) == 0) continue;
    struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit);
    rule(ctx, eperm, "clone", 1, &a);
  }
  rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);

  /* personality: no ADDR_NO_RANDOMIZE, no READ_IMPLIES_EXEC. */
  const uint64_t persona[] = {0x0040000 /* ADDR_NO_RANDOMIZE */, 0x0400000 /* READ_IMPLIES_EXEC */};
  for (size_t i = 0; i < 2; i++) {
    struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_MASKED_EQ, persona[i], persona[i]);
    rule(ctx, eperm, "personality", 1, &a);
  }

  /* ioctl: no typing into the controlling terminal's input. */
  const uint64_t tio[] = {TIOCSTI, TIOCLINUX};
  for (size_t i = 0; i < 2; i++) {
    struct scmp_arg_cmp a = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, tio[i]);
    rule(ctx, eperm, "ioctl", 1, &a);
  }

  int rc = seccomp_export_bpf(ctx, STDOUT_FILENO);
  seccomp_release(ctx);
  if (rc != 0) {
    fprintf(stderr, "seccomp_export_bpf: %s\n", strerror(-rc));
    return 1;
  }
  return 0;
}

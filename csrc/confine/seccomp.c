#include "confine/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))
#define SETID (S_ISUID | S_ISGID)
#define NEW_NS \
  (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP)
#define NEW_TIME 0x00000080 /* CLONE_NEWTIME: unshare only (clone's low byte is the exit signal) */

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#else
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#endif

/* The filter is a binary search over the system call numbers with the rules
 * at its leaves, each leaf ending in two shared returns (allow, EPERM), not
 * a chain of comparisons: the kernel compiles the filter and emulates it
 * once per system call number whenever a command installs it, so its
 * length is paid on every exec (a 200-instruction chain cost each command
 * a quarter of a millisecond). Adjacent refused numbers become one range. */
typedef enum { R_DENY, R_BITS, R_CREATE, R_VALUES } rule_kind;

typedef struct rule {
  uint32_t nr, last; /* the numbers nr..last (last > nr: a merged R_DENY range) */
  rule_kind kind;
  int err; /* R_DENY: the errno */
  int arg, arg2; /* R_BITS / R_VALUES: the argument; R_CREATE: flags, mode */
  uint32_t bits; /* R_BITS: refused bits */
  const uint32_t *vals; /* R_VALUES */
  int n;
  bool allowed; /* R_VALUES: vals are the only ones allowed (else the refused ones) */
} rule;

#define MAX_RULES 96
#define LEAF_RULES 4
#define MAX_FIXUPS 64

enum { TO_ALLOW, TO_EPERM };

typedef struct emitter {
  sb_seccomp *f;
  bool full;
  rule rules[MAX_RULES];
  int nrules;
  struct {
    size_t at;
    bool jt;
    int to;
  } fix[MAX_FIXUPS]; /* jumps to the leaf's returns */
  int nfix;
} emitter;

static size_t op(emitter *e, unsigned short code, unsigned char jt, unsigned char jf, uint32_t k) {
  if (e->f->len >= SB_SECCOMP_MAX) {
    e->full = true;
    return e->f->len - 1;
  }
  e->f->prog[e->f->len++] = (struct sock_filter){code, jt, jf, k};
  return e->f->len - 1;
}

static void ret(emitter *e, uint32_t v) { op(e, BPF_RET | BPF_K, 0, 0, v); }
static void ld_arg(emitter *e, int i) { op(e, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)ARG_LO(i)); }

/* Set a branch of the jump at `at` to land on instruction `to`. */
static void land(emitter *e, size_t at, bool jt, size_t to) {
  if (e->full) return;
  size_t off = to - at - 1;
  if (off > 255) {
    e->full = true;
    return;
  }
  if (jt) e->f->prog[at].jt = (unsigned char)off;
  else e->f->prog[at].jf = (unsigned char)off;
}

/* A conditional jump whose true and false branches go to the leaf's
 * returns (to = TO_ALLOW / TO_EPERM) or fall through (-1). */
static void jump(emitter *e, unsigned short code, uint32_t k, int jt_to, int jf_to) {
  size_t at = op(e, BPF_JMP | code | BPF_K, 0, 0, k);
  int to[2] = {jt_to, jf_to};
  for (int b = 0; b < 2; b++) {
    if (to[b] < 0) continue;
    if (e->nfix >= MAX_FIXUPS) {
      e->full = true;
      return;
    }
    e->fix[e->nfix].at = at;
    e->fix[e->nfix].jt = b == 0;
    e->fix[e->nfix++].to = to[b];
  }
}

static void add(emitter *e, rule r) {
  if (e->nrules >= MAX_RULES) {
    e->full = true;
    return;
  }
  r.last = r.nr;
  e->rules[e->nrules++] = r;
}
static void refuse(emitter *e, long nr, int err) { add(e, (rule){.nr = (uint32_t)nr, .kind = R_DENY, .err = err}); }
/* refused when argument i has any of `bits` */
static void refuse_bits(emitter *e, long nr, int i, uint32_t bits) {
  add(e, (rule){.nr = (uint32_t)nr, .kind = R_BITS, .arg = i, .bits = bits});
}
/* open-style: when flags (argument fi) create a file, its mode (argument
 * mi) may not carry set-id bits */
static void refuse_create_setid(emitter *e, long nr, int fi, int mi) {
  add(e, (rule){.nr = (uint32_t)nr, .kind = R_CREATE, .arg = fi, .arg2 = mi});
}
/* refused when argument i equals one of vals (allowed = false), or unless
 * it does (allowed = true) */
static void match_values(emitter *e, long nr, int i, const uint32_t *vals, int n, bool allowed) {
  add(e, (rule){.nr = (uint32_t)nr, .kind = R_VALUES, .arg = i, .vals = vals, .n = n, .allowed = allowed});
}

/* One rule's test and, when its number matched, its decision; A holds the
 * number on entry and, when the test fails, on exit. */
static void emit_rule(emitter *e, const rule *r) {
  if (r->kind == R_DENY && r->err == EPERM) {
    if (r->last == r->nr) {
      jump(e, BPF_JEQ, r->nr, TO_EPERM, -1);
    } else { /* nr <= A <= last */
      size_t gt = op(e, BPF_JMP | BPF_JGT | BPF_K, 0, 0, r->last);
      jump(e, BPF_JGE, r->nr, TO_EPERM, -1);
      land(e, gt, true, e->f->len);
    }
    return;
  }
  size_t test = op(e, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, r->nr);
  switch (r->kind) {
  case R_DENY: /* another errno: its own return */ ret(e, RET_ERRNO(r->err)); break;
  case R_BITS:
    ld_arg(e, r->arg);
    jump(e, BPF_JSET, r->bits, TO_EPERM, TO_ALLOW);
    break;
  case R_CREATE:
    ld_arg(e, r->arg);
    jump(e, BPF_JSET, (uint32_t)(O_CREAT | (O_TMPFILE & ~O_DIRECTORY)), -1, TO_ALLOW);
    ld_arg(e, r->arg2);
    jump(e, BPF_JSET, SETID, TO_EPERM, TO_ALLOW);
    break;
  case R_VALUES: {
    ld_arg(e, r->arg);
    int hit = r->allowed ? TO_ALLOW : TO_EPERM, miss = r->allowed ? TO_EPERM : TO_ALLOW;
    for (int k = 0; k < r->n; k++) jump(e, BPF_JEQ, r->vals[k], hit, k == r->n - 1 ? miss : -1);
    break;
  }
  }
  land(e, test, false, e->f->len);
}

/* rules[lo, hi), sorted; A holds the number. A few rules make a leaf (their
 * tests, then the shared returns); more split at the middle rule's number. */
static void emit_tree(emitter *e, int lo, int hi) {
  if (hi - lo <= LEAF_RULES) {
    e->nfix = 0;
    for (int i = lo; i < hi; i++) emit_rule(e, &e->rules[i]);
    size_t allow = op(e, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
    size_t eperm = op(e, BPF_RET | BPF_K, 0, 0, RET_ERRNO(EPERM));
    for (int i = 0; i < e->nfix; i++) land(e, e->fix[i].at, e->fix[i].jt, e->fix[i].to == TO_ALLOW ? allow : eperm);
    return;
  }
  int mid = lo + (hi - lo) / 2;
  size_t ge = op(e, BPF_JMP | BPF_JGE | BPF_K, 0, 0, e->rules[mid].nr);
  emit_tree(e, lo, mid);
  land(e, ge, true, e->f->len);
  emit_tree(e, mid, hi);
}

/* Sort by number; merge adjacent refusals with the same errno into ranges. */
static int merge_rules(emitter *e, char *why, size_t whylen);

static int by_nr(const void *a, const void *b) {
  uint32_t x = ((const rule *)a)->nr, y = ((const rule *)b)->nr;
  return x < y ? -1 : x > y;
}

static int merge_rules(emitter *e, char *why, size_t whylen) {
  qsort(e->rules, (size_t)e->nrules, sizeof *e->rules, by_nr);
  int n = 0;
  for (int i = 0; i < e->nrules; i++) {
    rule *r = &e->rules[i], *prev = n ? &e->rules[n - 1] : NULL;
    if (prev && r->nr <= prev->last) {
      snprintf(why, whylen, "seccomp: system call %u has two rules", r->nr);
      return -1;
    }
    if (prev && prev->kind == R_DENY && r->kind == R_DENY && prev->err == r->err && r->nr == prev->last + 1)
      prev->last = r->nr;
    else e->rules[n++] = *r;
  }
  e->nrules = n;
  return 0;
}

static const long denied[] = {
    SYS_kexec_load,
    SYS_init_module,
    SYS_finit_module,
    SYS_delete_module,
    SYS_settimeofday,
    SYS_clock_settime,
    SYS_clock_adjtime,
    SYS_adjtimex,
    SYS_bpf,
    SYS_perf_event_open,
    SYS_userfaultfd,
    SYS_add_key,
    SYS_request_key,
    SYS_keyctl,
    SYS_io_uring_setup,
    SYS_io_uring_enter,
    SYS_io_uring_register,
    SYS_mount,
    SYS_umount2,
    SYS_pivot_root,
    SYS_chroot,
    SYS_open_tree,
    SYS_move_mount,
    SYS_fsopen,
    SYS_fsconfig,
    SYS_fsmount,
    SYS_fspick,
    SYS_mount_setattr,
    SYS_swapon,
    SYS_swapoff,
    SYS_reboot,
    SYS_acct,
    SYS_quotactl,
    SYS_setns,
    SYS_open_by_handle_at,
    SYS_name_to_handle_at,
    SYS_fanotify_init,
    SYS_lookup_dcookie,
    SYS_vhangup,
    SYS_syslog,
    SYS_setxattr,
    SYS_lsetxattr,
    SYS_fsetxattr,
#ifdef SYS_kexec_file_load
    SYS_kexec_file_load,
#endif
#ifdef SYS_quotactl_fd
    SYS_quotactl_fd,
#endif
#if defined(__x86_64__)
    SYS_iopl,
    SYS_ioperm,
    SYS_create_module,
    SYS_get_kernel_syms,
    SYS_query_module,
    SYS_uselib,
    SYS_ustat,
    SYS_sysfs,
    SYS__sysctl,
    SYS_nfsservctl,
#endif
#ifdef SYS_setxattrat
    SYS_setxattrat,
#else
    463, /* setxattrat (Linux 6.13), newer than these headers */
#endif
};

int sb_seccomp_build(sb_seccomp *f, bool scope_pids, char *why, size_t whylen) {
#ifndef NATIVE_ARCH
  (void)f;
  (void)scope_pids;
  snprintf(why, whylen, "seccomp: the sandbox does not know this architecture's system calls");
  return -1;
#else
  f->len = 0;
  f->denied = 0;
  emitter e = {.f = f};
  for (size_t i = 0; i < sizeof denied / sizeof *denied; i++, f->denied++) refuse(&e, denied[i], EPERM);
  /* arguments in memory cannot be checked: libc falls back on ENOSYS */
  refuse(&e, SYS_clone3, ENOSYS);
  refuse(&e, SYS_openat2, ENOSYS);
  /* no set-id files: the mode arguments of every family creating or
   * changing one */
  refuse_bits(&e, SYS_fchmod, 1, SETID);
  refuse_bits(&e, SYS_fchmodat, 2, SETID);
#ifdef SYS_fchmodat2
  refuse_bits(&e, SYS_fchmodat2, 2, SETID);
#else
  refuse_bits(&e, 452, 2, SETID);
#endif
  refuse_bits(&e, SYS_mknodat, 2, SETID);
  refuse_create_setid(&e, SYS_openat, 2, 3);
#if defined(__x86_64__)
  refuse_bits(&e, SYS_chmod, 1, SETID);
  refuse_bits(&e, SYS_creat, 1, SETID);
  refuse_bits(&e, SYS_mknod, 1, SETID);
  refuse_create_setid(&e, SYS_open, 1, 2);
#endif
  /* no other namespaces */
  refuse_bits(&e, SYS_clone, 0, NEW_NS);
  refuse_bits(&e, SYS_unshare, 0, NEW_NS | NEW_TIME);
  /* no immutable files, no typing into the terminal */
  static const uint32_t ioctls[] = {FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, TIOCSTI, TIOCLINUX};
  match_values(&e, SYS_ioctl, 1, ioctls, 5, false);
  /* personality: only the harmless ones (Docker's list) */
  static const uint32_t pers[] = {0, 0x0008, 0x20000, 0x20008, 0xffffffffu};
  match_values(&e, SYS_personality, 0, pers, 5, true);
  if (scope_pids) { /* acting on other processes: only on oneself (pid 0) */
    static const uint32_t self[] = {0};
    match_values(&e, SYS_prlimit64, 0, self, 1, true);
    match_values(&e, SYS_setpriority, 1, self, 1, true);
    match_values(&e, SYS_sched_setaffinity, 0, self, 1, true);
    match_values(&e, SYS_sched_setscheduler, 0, self, 1, true);
    match_values(&e, SYS_sched_setparam, 0, self, 1, true);
  }
  if (merge_rules(&e, why, whylen) != 0) return -1;
  /* only the native ABI */
  op(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, arch));
  op(&e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, NATIVE_ARCH);
  ret(&e, RET_ERRNO(EPERM));
  op(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr));
#ifdef X32_BIT
  op(&e, BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_BIT);
  ret(&e, RET_ERRNO(EPERM));
#endif
  emit_tree(&e, 0, e.nrules);
  if (e.full) {
    snprintf(why, whylen, "seccomp: the filter is larger than %d instructions", SB_SECCOMP_MAX);
    return -1;
  }
  return 0;
#endif
}

bool sb_seccomp_available(void) {
  /* with filters, a NULL program is EFAULT; without, EINVAL */
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0) < 0 && errno == EFAULT;
}

#ifndef SB_PLAT_LINUX_ABI_H
#define SB_PLAT_LINUX_ABI_H
/* The Linux kernel's types and flags that the confinement's shared headers
 * name (a classic BPF program for seccomp, the namespaces' clone flags):
 * the kernel's headers on Linux; elsewhere the same layouts, so that the
 * headers compile. The files that use them are built on Linux only. */
#if defined(__linux__)
#include <linux/filter.h>
#include <sched.h>
#else
#include <stdint.h>

struct sock_filter {
  uint16_t code;
  uint8_t jt, jf;
  uint32_t k;
};

struct sock_fprog {
  unsigned short len;
  struct sock_filter *filter;
};

#define CLONE_NEWNS 0x00020000
#define CLONE_NEWCGROUP 0x02000000
#define CLONE_NEWUTS 0x04000000
#define CLONE_NEWIPC 0x08000000
#define CLONE_NEWUSER 0x10000000
#define CLONE_NEWPID 0x20000000
#define CLONE_NEWNET 0x40000000
#endif

#endif

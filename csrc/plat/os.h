#ifndef SB_PLAT_OS_H
#define SB_PLAT_OS_H
/* Which platform this build is for, and whether it has the Linux layers
 * (openat2, namespaces, seccomp, Landlock, cgroups, pidfds, the network
 * namespace's agent). `make PORTABLE=1` builds on Linux without them
 * (-DSB_PORTABLE): the same code paths as on macOS and the BSDs, run by the
 * suite here. Each concern's switch lives in one header of this folder. */
#if defined(__linux__) && !defined(SB_PORTABLE)
#define SB_LINUX 1
#else
#define SB_LINUX 0
#endif

#if defined(__APPLE__)
#define SB_PLATFORM "macos"
#elif defined(__FreeBSD__)
#define SB_PLATFORM "freebsd"
#elif defined(__linux__)
#define SB_PLATFORM "linux"
#else
#define SB_PLATFORM "posix"
#endif

/* This build, as messages name it */
#if defined(__linux__) && defined(SB_PORTABLE)
#define SB_BUILD_NAME "make PORTABLE=1"
#else
#define SB_BUILD_NAME SB_PLATFORM
#endif

#endif

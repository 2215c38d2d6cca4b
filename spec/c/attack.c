/* Test helper for the isolation specs: each subcommand tries one attack of
 * a confined command on its host and prints "ok" when it worked, or
 * "refused <ERRNO>" when it did not. Some set things up on the host side.
 *   attack caps                      print CapEff of this process
 *   attack settime                   settimeofday(now)
 *   attack bpf                       create a BPF array map
 *   attack prlimit <pid> | cpu <pid> RLIMIT_NOFILE 7:7 / RLIMIT_CPU 1:1 on another process
 *   attack renice <pid> | affinity <pid>
 *   attack netns <pid>               move loopback into <pid>'s network namespace
 *   attack shm-create <text>         (host) a 0600 SysV segment holding text; prints its id
 *   attack shm <id>                  read a SysV segment
 *   attack unix-listen <path> <s>    (host) serve a unix socket for s seconds; print connections
 *   attack unix <path>               connect to a unix socket file and send
 *   attack setuid <file>             chmod 4755, chmod g+s, open(O_CREAT, 04755), mknod S_ISUID
 *   attack setcap <file>             setxattr security.capability
 *   attack chattr <file>             FS_IOC_SETFLAGS immutable
 *   attack hostname                  sethostname
 *   attack syscalls                  a list of refused system calls, one line each
 *   attack x32 | i386                a system call through another ABI */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/fs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static int result(long r) {
  if (r >= 0) {
    puts("ok");
    return 0;
  }
  printf("refused %s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
  return 1;
}

static int netns_move(pid_t target) {
  int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (s < 0) return result(-1);
  struct {
    struct nlmsghdr h;
    struct ifinfomsg i;
    struct rtattr a;
    uint32_t pid;
  } m;
  memset(&m, 0, sizeof m);
  m.h.nlmsg_len = sizeof m;
  m.h.nlmsg_type = RTM_NEWLINK;
  m.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  m.i.ifi_family = AF_UNSPEC;
  m.i.ifi_index = 1; /* lo */
  m.a.rta_type = IFLA_NET_NS_PID;
  m.a.rta_len = RTA_LENGTH(sizeof(uint32_t));
  m.pid = (uint32_t)target;
  if (send(s, &m, sizeof m, 0) < 0) return result(-1);
  char buf[512];
  ssize_t n = recv(s, buf, sizeof buf, 0);
  if (n < (ssize_t)sizeof(struct nlmsghdr)) return result(-1);
  struct nlmsghdr *h = (struct nlmsghdr *)buf;
  if (h->nlmsg_type == NLMSG_ERROR) {
    struct nlmsgerr *e = NLMSG_DATA(h);
    errno = -e->error;
    return result(e->error == 0 ? 0 : -1);
  }
  return result(0);
}

static void try(const char *name, long r) {
  printf("%s ", name);
  result(r);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *op = argv[1];
  const char *arg = argc > 2 ? argv[2] : "";
  pid_t pid = (pid_t)atoi(arg);
  if (!strcmp(op, "caps")) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
      if (!strncmp(line, "CapEff:", 7)) fputs(line + 8, stdout);
    return 0;
  }
  if (!strcmp(op, "settime")) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return result(settimeofday(&tv, NULL));
  }
  if (!strcmp(op, "bpf")) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_ARRAY;
    a.key_size = 4;
    a.value_size = 4;
    a.max_entries = 1;
    return result(syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a));
  }
  if (!strcmp(op, "prlimit")) {
    struct rlimit l = {7, 7};
    return result(prlimit(pid, RLIMIT_NOFILE, &l, NULL));
  }
  if (!strcmp(op, "cpu")) {
    struct rlimit l = {1, 1};
    return result(prlimit(pid, RLIMIT_CPU, &l, NULL));
  }
  if (!strcmp(op, "renice")) return result(setpriority(PRIO_PROCESS, (id_t)pid, 19));
  if (!strcmp(op, "affinity")) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    return result(sched_setaffinity(pid, sizeof set, &set));
  }
  if (!strcmp(op, "netns")) return netns_move(pid);
  if (!strcmp(op, "shm-create")) {
    int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    if (id < 0) return result(-1);
    char *p = shmat(id, NULL, 0);
    strcpy(p, arg);
    shmdt(p);
    printf("%d\n", id);
    return 0;
  }
  if (!strcmp(op, "shm")) {
    char *p = shmat(atoi(arg), NULL, SHM_RDONLY);
    if (p == (void *)-1) return result(-1);
    printf("ok %s\n", p);
    return 0;
  }
  if (!strcmp(op, "unix-listen") || !strcmp(op, "unix")) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", arg);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!strcmp(op, "unix")) {
      if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) return result(-1);
      return result(write(s, "hello", 5));
    }
    unlink(arg);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 8) != 0) return result(-1);
    printf("listening\n");
    fflush(stdout);
    time_t end = time(NULL) + (argc > 3 ? atoi(argv[3]) : 5);
    int n = 0;
    struct timeval tv = {1, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (time(NULL) < end) {
      int c = accept(s, NULL, NULL);
      if (c >= 0) n++, close(c);
    }
    printf("connections %d\n", n);
    return 0;
  }
  if (!strcmp(op, "setuid")) {
    try("chmod-4755", chmod(arg, 04755));
    try("chmod-2755", chmod(arg, 02755));
    try("fchmodat", fchmodat(AT_FDCWD, arg, 06755, 0));
    char other[4096];
    snprintf(other, sizeof other, "%s.new", arg);
    try("open-creat", open(other, O_WRONLY | O_CREAT | O_EXCL, 04755));
    snprintf(other, sizeof other, "%s.node", arg);
    try("mknod", mknod(other, S_IFREG | 04755, 0));
    return 0;
  }
  if (!strcmp(op, "setcap")) {
    /* vfs_cap_data v2: effective, permitted cap_dac_read_search */
    uint32_t cap[5] = {0x02000001, 1u << 2, 0, 0, 0};
    return result(setxattr(arg, "security.capability", cap, sizeof cap, 0));
  }
  if (!strcmp(op, "chattr")) {
    int fd = open(arg, O_RDONLY);
    int flags = FS_IMMUTABLE_FL;
    return result(fd < 0 ? -1 : ioctl(fd, FS_IOC_SETFLAGS, &flags));
  }
  if (!strcmp(op, "hostname")) return result(sethostname("evil-host", 9));
  if (!strcmp(op, "syscalls")) {
    try("io_uring_setup", syscall(SYS_io_uring_setup, 1, calloc(1, 256)));
    try("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
    try("add_key", syscall(SYS_add_key, "user", "x", "y", 1, -3));
    try("perf_event_open", syscall(SYS_perf_event_open, calloc(1, 128), 0, -1, -1, 0));
    try("userfaultfd", syscall(SYS_userfaultfd, 0));
    try("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
    try("init_module", syscall(SYS_init_module, NULL, 0, ""));
    try("mount", mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
    try("unshare-user", unshare(CLONE_NEWUSER));
    try("unshare-net", unshare(CLONE_NEWNET));
    try("personality", personality(READ_IMPLIES_EXEC));
    try("clock_settime", syscall(SYS_clock_settime, CLOCK_REALTIME, NULL));
    try("swapoff", syscall(SYS_swapoff, "/none"));
    return 0;
  }
#if defined(__x86_64__)
  if (!strcmp(op, "x32")) return result(syscall(0x40000000 | SYS_getpid));
  if (!strcmp(op, "i386")) {
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory"); /* i386 getpid */
    if (r < 0) errno = (int)-r;
    return result(r);
  }
#endif
  fprintf(stderr, "unknown attack %s\n", op);
  return 2;
}

/* What the mount view's two files share (confine/view.c builds the view,
 * confine/view_keep.c keeps it): the mount API's numbers where the
 * headers lack them, and small helpers the init may call (system calls
 * only: confine/ns_impl.h). Private to those two files. */
#ifndef SB_CONFINE_VIEW_IMPL_H
#define SB_CONFINE_VIEW_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>

#include "confine/ns_impl.h"

#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct sb_mount_attr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

/* (in confine/view.c) strlen; the mount attributes and the remount
 * flags of a tree that is read-only or not, never set-id, with or
 * without devices and exec */
CHILD size_t sb_view_slen(const char *s);
CHILD unsigned long long sb_view_attrs(bool ro, bool nodev, bool noexec);
CHILD unsigned long sb_view_ms_flags(bool ro, bool nodev, bool noexec);

#endif

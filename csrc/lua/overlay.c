#include "lua/overlay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "fs/container.h"
#include "fs/overlay.h"
#include "fs/tree.h"
#include "lua/options.h"
#include "plat/fd.h"

/* The overlay part: the state directory (upper, work, checkpoints) and
 * whether it goes at dispose. Released after the confinement part (it is
 * registered first), so the mount is gone when the directory is removed. */
typedef struct overlay {
  int parent_fd; /* the state directory's parent, for removing a temporary one */
  char name[NAME_MAX + 1];
  int upper_fd, work_fd; /* SB_O_DIR */
  bool temporary;
} overlay;

static void ov_close(lua_State *L, sb_sandbox *sb, void *state) {
  (void)L;
  overlay *ov = state;
  if (ov->upper_fd >= 0) close(ov->upper_fd);
  if (ov->work_fd >= 0) close(ov->work_fd);
  if (ov->temporary && ov->parent_fd >= 0) {
    uint64_t freed;
    sb_tree_remove_own(ov->parent_fd, ov->name, &freed); /* best effort: nothing else can be done at dispose */
  }
  if (ov->parent_fd >= 0) close(ov->parent_fd);
  sb_free(&sb->fs.mem, ov, sizeof *ov);
}

static const sb_part_class overlay_part = {"overlay", ov_close};

static int open_dir(int dirfd, const char *name) {
  if (mkdirat(dirfd, name, 0700) != 0 && errno != EEXIST) return -1;
  return openat(dirfd, name, SB_O_DIR | O_NOFOLLOW | O_CLOEXEC);
}

static sb_code fail_path(sb_err *e, const char *what, const char *path) {
  return sb_failf(e, sb_code_from_errno(errno), "state_dir: %s %.300s: %s", what, path, strerror(errno));
}

/* Is `inner` the directory `outer` or beneath it (real paths)? */
static bool within(const char *inner, const char *outer) {
  size_t n = strlen(outer);
  if (n == 1) return true; /* "/" */
  return strncmp(inner, outer, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

/* The state directory: given (made if missing) or a fresh temporary one;
 * its layers made; the base it belongs to recorded, or checked. */
static sb_code prepare(overlay *ov, const char *state, const char *base, char *real, sb_err *e) {
  char tmpl[PATH_MAX];
  if (!state) {
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/sandbox-overlay-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) return fail_path(e, "cannot create", tmpl);
    state = tmpl;
    ov->temporary = true;
    if (!realpath(state, real)) return fail_path(e, "cannot resolve", state);
  } else if (!realpath(state, real)) { /* not there yet: judge where it would be, before making it */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", state);
    char *slash = strrchr(parent, '/');
    const char *name = slash ? slash + 1 : parent;
    if (slash == parent) parent[1] = '\0';
    else if (slash) *slash = '\0';
    char rp[PATH_MAX];
    if (!realpath(slash ? parent : ".", rp)) return fail_path(e, "cannot resolve the parent of", state);
    if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        snprintf(real, PATH_MAX, "%s/%s", strcmp(rp, "/") == 0 ? "" : rp, name) >= PATH_MAX)
      return sb_failf(e, SB_EINVAL, "state_dir: %.300s is not a directory name", state);
  }
  if (within(real, base) || within(base, real))
    return sb_failf(e, SB_EINVAL,
                    "state_dir (%.200s) and base_dir (%.200s) must not contain one another: "
                    "the agent would see its own layers",
                    real, base);
  if (!ov->temporary && mkdir(real, 0700) != 0 && errno != EEXIST) return fail_path(e, "cannot create", real);
  char *slash = strrchr(real, '/');
  snprintf(ov->name, sizeof ov->name, "%s", slash + 1);
  *slash = '\0';
  ov->parent_fd = open(slash == real ? "/" : real, SB_O_DIR | O_CLOEXEC);
  *slash = '/';
  int sfd = ov->parent_fd < 0 ? -1 : openat(ov->parent_fd, ov->name, SB_O_DIR | O_NOFOLLOW | O_CLOEXEC);
  if (sfd < 0) return fail_path(e, "cannot open", real);
  char seen[PATH_MAX + 2];
  ssize_t n = sb_read_small(sfd, "base", seen, sizeof seen);
  sb_code rc = SB_OK;
  if (n > 0) {
    seen[n] = '\0';
    seen[strcspn(seen, "\n")] = '\0';
    if (strcmp(seen, base) != 0)
      rc = sb_failf(e, SB_EINVAL, "state_dir %.200s holds the overlay of %.200s, not of %.200s", real, seen, base);
  } else {
    char line[PATH_MAX + 2];
    int len = snprintf(line, sizeof line, "%s\n", base);
    int fd = openat(sfd, "base", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, line, (size_t)len) != len) rc = fail_path(e, "cannot write the base marker in", real);
    if (fd >= 0) close(fd);
  }
  if (rc == SB_OK) {
    ov->upper_fd = open_dir(sfd, "upper");
    ov->work_fd = open_dir(sfd, "work");
    int cp = open_dir(sfd, "checkpoints");
    if (cp >= 0) close(cp);
    if (ov->upper_fd < 0 || ov->work_fd < 0 || cp < 0) rc = fail_path(e, "cannot make the layers in", real);
  }
  close(sfd);
  return rc;
}

int sb_lua_overlay_attach(lua_State *L, sb_sandbox *sb, int ud, int opts, sb_err *e) {
  ud = lua_absindex(L, ud);
  overlay *ov = sb_malloc(&sb->fs.mem, sizeof *ov);
  if (!ov) luaL_error(L, "not enough memory");
  memset(ov, 0, sizeof *ov);
  ov->parent_fd = ov->upper_fd = ov->work_fd = -1;
  sb_part_add(L, sb, &overlay_part, ov); /* from here the sandbox's release frees it */
  char real[PATH_MAX];
  if (prepare(ov, sb_opt_str_or(L, opts, "state_dir", NULL), sb->cwd, real, e) != SB_OK) return -1;
  lua_pushstring(L, real);
  sb_lua_setfield(L, ud, "state_dir");
  lua_pushboolean(L, ov->temporary);
  sb_lua_setfield(L, ud, "state_temporary");
  return 0;
}

bool sb_lua_overlay_layers(const sb_sandbox *sb, sb_lua_layers *out) {
  overlay *ov = sb_part_get(sb, &overlay_part);
  if (!ov) return false;
  *out = (sb_lua_layers){.upper_fd = ov->upper_fd, .work_fd = ov->work_fd, .temporary = ov->temporary};
  return true;
}

/* Where the kernel cannot mount it, the file operations run over the
 * layers in userspace (fs/overlay.c) and commands are refused. */
static int userspace_view(lua_State *L, sb_sandbox *sb, overlay *ov, int opts, const char *why, sb_err *e) {
  size_t nroots;
  int base = sb_container_base(&sb->fs, &nroots);
  if (nroots)
    return sb_failf(e, SB_ENOTSUP, "read_roots need the kernel's overlayfs, which cannot be mounted here: %s", why), -1;
  int lower = fcntl(base, F_DUPFD_CLOEXEC, 3), upper = fcntl(ov->upper_fd, F_DUPFD_CLOEXEC, 3);
  if (lower < 0 || upper < 0) {
    sb_failf(e, SB_EIO, "overlay: %s", strerror(errno));
    if (lower >= 0) close(lower);
    if (upper >= 0) close(upper);
    return -1;
  }
  const char *mode = sb_opt_str(L, opts, "mode");
  sb_overlay_opts o = {.upper_fd = upper,
                       .lower_fd = lower,
                       .can_read = strchr(mode, 'r') != NULL,
                       .can_write = strchr(mode, 'w') != NULL,
                       .userxattr = geteuid() != 0, /* as the kernel's mount would mark them here */
                       .max_disk_usage = sb_opt_u64_or(L, opts, "max_disk_usage", SB_UNLIMITED),
                       .why = why};
  sb->fs.be->close(&sb->fs);
  return sb_overlay_open(&sb->fs, &o, e) == SB_OK ? 0 : -1;
}

int sb_lua_overlay_mount(lua_State *L, sb_sandbox *sb, int ud, int opts, int fd, const char *why, int mem, sb_err *e) {
  overlay *ov = sb_part_get(sb, &overlay_part);
  if (!ov) {
    if (fd >= 0) close(fd);
    if (mem >= 0) close(mem);
    return 0;
  }
  if (fd < 0) {
    if (mem >= 0) close(mem);
    if (!why || !*why)
      why = "the sandbox has no namespaces of its own (confine = false, or confine = {namespaces = false})";
    if (userspace_view(L, sb, ov, opts, why, e) != 0) return -1;
    lua_pushliteral(L, "userspace");
    sb_lua_setfield(L, ud, "overlay_view");
    lua_pushstring(L, why);
    sb_lua_setfield(L, ud, "overlay_why");
    return 0;
  }
  /* an upper layer the view made in memory (max_disk_usage binds commands)
   * replaces the state directory's: the review reads it by this fd */
  if (mem >= 0) {
    close(ov->upper_fd);
    ov->upper_fd = mem;
    lua_pushfstring(L, "/proc/self/fd/%d", mem);
    sb_lua_setfield(L, ud, "upper_dir");
  }
  int usage = fcntl(ov->upper_fd, F_DUPFD_CLOEXEC, 3);
  /* every file operation goes through the merged view from here; max_disk_usage counts the upper layer */
  sb_container_set_root(&sb->fs, fd, usage);
  lua_pushliteral(L, "kernel");
  sb_lua_setfield(L, ud, "overlay_view");
  return 0;
}

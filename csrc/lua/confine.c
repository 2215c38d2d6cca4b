#include "lua/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "lua/options.h"
#include "lua/tls.h"

static void confine_close(lua_State *L, sb_sandbox *sb, void *state) {
  (void)L;
  sb_confine_release(state, &sb->fs.mem);
  sb_free(&sb->fs.mem, state, sizeof(sb_confine));
}

static const sb_part_class confine_part = {"confine", confine_close};

sb_confine *sb_lua_confine(const sb_sandbox *sb) { return sb_part_get(sb, &confine_part); }

int sb_lua_confine_upper_fd(const sb_sandbox *sb) {
  sb_confine *c = sb_lua_confine(sb);
  return c && c->upper_fd >= 0 ? fcntl(c->upper_fd, F_DUPFD_CLOEXEC, 3) : -1;
}

int sb_lua_confine_merged_fd(const sb_sandbox *sb, const char **why) {
  sb_confine *c = sb_lua_confine(sb);
  if (!c || c->merged_fd < 0) {
    *why = c ? c->why : NULL;
    return -1;
  }
  int fd = fcntl(c->merged_fd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) *why = strerror(errno);
  return fd;
}

/* sb.confinement: {enabled, refused?, <layer> = {enforced, why?, ...}}. */
static void push_report(lua_State *L, const sb_confine *c) {
  lua_createtable(L, 0, c->nlayers + 2);
  lua_pushboolean(L, c->enabled && !c->refuse);
  lua_setfield(L, -2, "enabled");
  if (c->refuse) {
    lua_pushstring(L, c->why);
    lua_setfield(L, -2, "refused");
  }
  for (int i = 0; i < c->nlayers; i++) {
    const sb_layer *l = &c->layers[i];
    lua_createtable(L, 0, l->ndetails + 2);
    lua_pushboolean(L, l->enforced);
    lua_setfield(L, -2, "enforced");
    if (l->why) {
      lua_pushstring(L, l->why);
      lua_setfield(L, -2, "why");
    }
    for (int k = 0; k < l->ndetails; k++) {
      if (l->details[k].type == SB_DETAIL_STR) lua_pushstring(L, l->details[k].s);
      else if (l->details[k].type == SB_DETAIL_BOOL) lua_pushboolean(L, (int)l->details[k].i);
      else lua_pushinteger(L, (lua_Integer)l->details[k].i);
      lua_setfield(L, -2, l->details[k].key);
    }
    lua_setfield(L, -2, l->name);
  }
}

/* What the made confinement tells the other parts: commands find the CA
 * bundle at the view's path. */
static void made(sb_sandbox *sb, const sb_confine *c, const char *ca_bundle) {
  if (ca_bundle && c->ns.init > 0) sb_lua_tls_seen_at(sb, SB_VIEW_CA_BUNDLE);
}

void sb_lua_confine_ready(sb_sandbox *sb) {
  sb_confine *c = sb_lua_confine(sb);
  if (!c || !c->pending) return;
  sb_confine_ready(c, &sb->fs.mem);
  made(sb, c, c->later.ca_bundle);
}

/* __index of the sandbox's fields while its confinement waits: the first
 * read of sb.confinement makes it and keeps the report as a field. */
static int l_pending_index(lua_State *L) {
  const char *k = lua_tostring(L, 2);
  if (lua_type(L, 2) != LUA_TSTRING || strcmp(k, "confinement") != 0) return 0;
  sb_sandbox *sb = lua_touserdata(L, lua_upvalueindex(1));
  if (sb->closed || !sb_lua_confine(sb)) return 0; /* disposed before anything was made */
  sb_lua_confine_ready(sb);
  push_report(L, sb_lua_confine(sb));
  lua_pushvalue(L, -1);
  lua_setfield(L, 1, "confinement");
  return 1;
}

int sb_lua_confine_attach(lua_State *L, sb_sandbox *sb, int ud, int opts, const sb_lua_layers *layers, sb_err *e) {
  ud = lua_absindex(L, ud);
  opts = lua_absindex(L, opts);
  sb_confine *c = sb_malloc(&sb->fs.mem, sizeof *c);
  if (!c) luaL_error(L, "not enough memory");
  sb_confine_init(c);
  sb_part_add(L, sb, &confine_part, c); /* from here the sandbox's release frees it */
  const char *read_paths[SB_MAX_READ_PATHS + 1];
  size_t n = 0;
  if (lua_getfield(L, opts, "read_paths") == LUA_TTABLE) { /* strings stay in opts */
    size_t len = (size_t)lua_rawlen(L, -1);
    if (len > SB_MAX_READ_PATHS) luaL_error(L, "at most %d read_paths", SB_MAX_READ_PATHS);
    for (size_t i = 1; i <= len; i++) {
      lua_rawgeti(L, -1, (lua_Integer)i);
      read_paths[n++] = lua_tostring(L, -1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  read_paths[n] = NULL;
  sb_confine_opts co = {
      .confine = sb_opt_bool(L, opts, "confine"),
      .namespaces = sb_opt_bool(L, opts, "namespaces"),
      .tmp_size = sb_opt_u64(L, opts, "tmp_size"),
      .root_path = sb->cwd,
      .allow_outbound = sb_opt_bool(L, opts, "allow_outbound"),
      .limits = {.memory = sb_opt_u64_or(L, opts, "memory_limit", 0),
                 .pids = sb_opt_u64_or(L, opts, "pids_limit", 0),
                 .cpu = sb_opt_num_or(L, opts, "cpu_limit", 0)},
      .file_size = sb_opt_u64_or(L, opts, "file_size_limit", 0),
      .read_paths = read_paths,
      .ca_bundle = sb_lua_tls_bundle(sb),
  };
  lua_getfield(L, opts, "allowed_hosts");
  co.allowed_hosts = lua_istable(L, -1);
  lua_pop(L, 1);
  if (lua_getfield(L, opts, "user") == LUA_TTABLE) {
    co.drop_user = true;
    co.uid = (uid_t)sb_opt_u64(L, -1, "uid");
    co.gid = (gid_t)sb_opt_u64(L, -1, "gid");
  }
  lua_pop(L, 1);
  sb->fs.be->cmd->tree(&sb->fs, &co.tree);
  co.overlay = layers != NULL;
  if (layers) {
    co.upper_fd = layers->upper_fd;
    co.work_fd = layers->work_fd;
    co.state_temporary = layers->temporary;
  }
  co.commands = sb_opt_bool(L, opts, "exec");
  /* the policy the file tools obey, for commands (SPEC §6.1) */
  const sb_policy *pol = sb->fs.policy;
  const char *mode = sb_opt_str(L, opts, "mode");
  co.policy = pol;
  co.mode = strcmp(mode, "r") == 0 ? 'r' : strcmp(mode, "w") == 0 ? 'w' : 'b';
  co.extensions = pol->has_ext_read || pol->has_ext_write;
  co.max_disk = sb_opt_u64_or(L, opts, "max_disk_usage", SB_UNLIMITED);
  co.disk_files_only = sb_opt_bool(L, opts, "max_disk_usage_files_only");
  if (sb_confine_setup(c, &co, &sb->fs.mem) != 0) {
    sb_failf(e, SB_ENOTSUP, "%s", c->why); /* a copy: c is freed before it is shown */
    return -1;
  }
  if (c->pending) { /* the report waits for its first reader */
    lua_getiuservalue(L, ud, 1);
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, ud);
    lua_pushcclosure(L, l_pending_index, 1);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    return 0;
  }
  made(sb, c, co.ca_bundle);
  push_report(L, c);
  sb_lua_setfield(L, ud, "confinement");
  return 0;
}
